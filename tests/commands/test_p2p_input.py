"""`--p2p` on estimate and plan, and plan reading a no-P2P start from its log (non_torch.non_torch_gib)."""

from __future__ import annotations

import json

ESTIMATE = ("estimate", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "NVIDIA-A100-SXM4-80GB", "--vllm-version",
            "0.10.1.1", "--tp", "2", "--max-model-len", "16384", "--gpu-memory-utilization", "0.25", "-o", "json")
# A hard-wrapped worker log, as dennislee22/vLLM-benchmarking saved its 0.10.1.1 starts (the warning cut mid-line).
WRAPPED_LOG = """\
(APIServer pid=1217) INFO 09-03 00:35:55 [api_server.py:1805] vLLM API server version 0.10.1.1
(VllmWorker TP0 pid=1430) WARNING 09-03 00:36:44 [custom_all_reduce.py:147] Custom allreduce is disabled because your \
platform lacks GPU
 P2P capability or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.
(VllmWorker TP0 pid=1430) INFO 09-03 00:40:53 [gpu_worker.py:276] Available KV cache memory: 12.02 GiB
(EngineCore_0 pid=1358) INFO 09-03 00:40:55 [kv_cache_utils.py:849] GPU KV cache size: 450,192 tokens
"""


def test_estimate_p2p_no_charges_the_tp1_figure_and_unknown_the_larger(cli):
    runs = {value: cli(*ESTIMATE, *(("--p2p", value) if value else ())) for value in ("no", "yes", "unknown", None)}
    assert all(r.returncode == 0 for r in runs.values()), [r.stderr for r in runs.values()]
    got = {value: json.loads(r.stdout) for value, r in runs.items()}
    assert got["no"]["non_torch_gib"] == 0.13
    assert [got[v].pop("p2p") for v in ("no", "yes", "unknown", None)] == ["no", "yes", "unknown", "unknown"]
    assert got["yes"] == got["unknown"] == got[None] and got[None]["non_torch_gib"] == 0.6
    assert got[None]["kv_cache_tokens"] < got["no"]["kv_cache_tokens"] <= 450192  # the logged start's KV
    bad = cli(*ESTIMATE, "--p2p", "maybe")
    assert bad.returncode == 2 and "--p2p: invalid choice: 'maybe'" in bad.stderr and not bad.stdout


def test_estimate_json_echoes_the_model_inputs(cli):
    """--p2p was missing from the JSON result while the flags were in it (review L8): a result read later could not
    say whether it was sized with or without peer access. The other model inputs are echoed with it."""
    data = json.loads(cli(*ESTIMATE, "--p2p", "no", "--compile-cache", "warm", "--other-gib", "1.5").stdout)
    assert (data["p2p"], data["compile_cache"], data["other_gib"], data["allow_long_max_model_len"]) == (
        "no", "warm", 1.5, False)
    data = json.loads(cli(*ESTIMATE).stdout)
    assert (data["p2p"], data["compile_cache"], data["other_gib"]) == ("unknown", "cold", 0.0)


def test_plan_reads_the_missing_p2p_from_the_log_unless_told(cli, tmp_path):
    log = tmp_path / "start.log"
    log.write_text(WRAPPED_LOG)
    plan = ("plan", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "NVIDIA-A100-SXM4-80GB", "--tp", "2",
            "--max-model-len", "16384", "--gpu-memory-utilization", "0.25", "-o", "json")
    from_log, told = (json.loads(cli(*plan, "--log", str(log), *extra).stdout)["current"]
                      for extra in ((), ("--p2p", "yes")))
    no, yes = (json.loads(cli(*ESTIMATE, "--p2p", value).stdout) for value in ("no", "yes"))
    assert from_log["kv_cache_tokens"] == no["kv_cache_tokens"] > told["kv_cache_tokens"] == yes["kv_cache_tokens"]
