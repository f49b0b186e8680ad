"""The stack frames above a configuration-time refusal in the rehearsal pod's rendered traceback, by stage.

Moved out of ``timeline`` (which places the rendered lines in time): fixed data, one list per stage.
"""

from __future__ import annotations


def frames(stage: str) -> list[tuple[str, int, str, str]]:
    """The traceback frames vLLM prints above a refusal raised at ``stage`` (config, executor, worker, else the
    platform's device query), as the rehearsal pod renders them."""
    site = "/usr/local/lib/python3.12/dist-packages/vllm"
    frames = [("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())"),
              (f"{site}/entrypoints/cli/main.py", 54, "main", "args.dispatch_function(args)"),
              (f"{site}/entrypoints/cli/serve.py", 57, "cmd", "uvloop.run(run_server(args))"),
              (f"{site}/entrypoints/openai/api_server.py", 1791, "run_server",
               "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)")]
    if stage == "config":
        return [*frames, (f"{site}/engine/arg_utils.py", 1049, "create_engine_config",
                          "model_config = self.create_model_config()")]
    if stage == "executor":  # Ray's executor placing the workers (executor/ray_utils.py@0.11.0 l.380, l.252)
        return [(f"{site}/executor/ray_utils.py", 380, "initialize_ray_cluster",
                 "_wait_until_pg_ready(current_placement_group)"),
                (f"{site}/executor/ray_utils.py", 252, "_wait_until_pg_ready", "raise ValueError(")]
    if stage == "worker":  # the engine core's worker, building its model runner (v1/worker/*.py@0.11.0)
        return [(f"{site}/v1/worker/gpu_worker.py", 201, "init_device",
                 "self.model_runner: GPUModelRunner = GPUModelRunner("),
                (f"{site}/v1/worker/gpu_model_runner.py", 438, "__init__",
                 "self.sampled_token_ids_pinned_cpu = torch.empty(")]
    return [*frames, (f"{site}/platforms/cuda.py", 96, "get_device_capability",
                      "major, minor = torch.cuda.get_device_capability(device_id)")]
