"""Check that a planner change leaves every answer as it was: plans and estimates over a grid. Not a test.

A change made for speed (fewer estimates, a search stopped early) must not move any plan. The grid: the
``bench_plan.py`` cases through the CLI (``plan -o json`` and ``estimate -o json``), then every calibration case
(``tests/data/calibration``) estimated and planned eight ways (as it ran; with its logged failure and KV; an fp8 policy
at 16 and at 1; a CUDA-graph capture OOM; 32 at two GPUs a node; a weights OOM; a profile OOM at 4). Each record
holds the plan's JSON and its full ``repr`` (every float unrounded), or the error it raised.

Usage: python bench/plan_grid.py --arm base=OTHER/src --arm this=src   (prints how many records differ, and which)
       python bench/plan_grid.py --child > records.jsonl               (this environment's records)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arms import env_for, parse_arms

CASES = Path(__file__).resolve().parent.parent / "tests" / "data" / "calibration"
FP8 = {"apiVersion": "vllm-remedy.io/v1alpha1", "kind": "Policy",
       "kv_cache_fp8": {"status": "allowed", "evaluated": "bench"},
       "flags": {"kv-cache-dtype": {"allowed": ["auto", "fp8"]}}}
BENCH = [  # bench_plan.py's cases, as CLI flags ("{policy}": the fp8 policy file)
    ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L4", "--vllm-version", "0.8.5"],
    ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L4", "--vllm-version", "0.8.5",
     "--policy", "{policy}"],
    ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "NVIDIA-A100-SXM4-40GB", "--vllm-version", "0.9.2",
     "--failure", "oom_loading_weights"],
    ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA-L4", "--vllm-version", "0.12.0",
     "--gpu-memory-utilization", "0.95", "--max-model-len", "8192", "--failure", "cudagraph_capture_oom"],
    ["--model", "Qwen/Qwen2.5-72B-Instruct", "--gpu", "NVIDIA-H100-80GB-HBM3", "--vllm-version", "0.19.0",
     "--tp", "2", "--target-concurrency", "64"],
]
PLAN_ONLY = ("--policy", "--failure", "--target-concurrency")


def _record(cid: str, fn: Callable[[], Any]) -> None:
    try:
        got = fn()
        rec: dict[str, Any] = {"id": cid, "json": got.to_json(), "repr": repr(got)}
    except Exception as exc:  # an error is an answer too, and must stay the same
        rec = {"id": cid, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(rec, sort_keys=True, default=str))


def _cli(policy: str) -> None:
    from vllm_remedy import cli
    for i, flags in enumerate(BENCH):
        for command in ("plan", "estimate"):
            argv = [command, *(policy if f == "{policy}" else f for f in flags), "-o", "json"]
            if command == "estimate":
                for flag in PLAN_ONLY:
                    if flag in argv:
                        del argv[argv.index(flag):argv.index(flag) + 2]
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = cli.main(argv)
                except SystemExit as exc:
                    code = exc.code
            print(json.dumps({"id": f"cli/{command}/{i}", "code": code, "stdout": out.getvalue(),
                              "stderr": err.getvalue()}))


def child() -> None:
    """Print this environment's records, one JSON line each."""
    import yaml

    from vllm_remedy.policy import Policy

    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "fp8.yaml"
        policy.write_text(yaml.safe_dump(FP8))
        _cli(str(policy))
    fp8 = Policy.from_mapping(FP8)
    for path in sorted(CASES.glob("*.yaml")):
        _case(path.name, yaml.safe_load(path.read_text()), fp8)


def _case(name: str, case: dict[str, Any], fp8: Any) -> None:
    """One calibration case's estimate and eight plans, from the model, card and settings the accuracy report
    estimates it with (``calibration.estimate_case``)."""
    from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
    from vllm_remedy.vllm.memory import estimate
    from vllm_remedy.vllm.memory.calibration import estimate_case
    from vllm_remedy.vllm.outcomes import Failure

    seen: dict[str, Any] = {}

    def capture(model: Any, gpu: Any, settings: Any) -> Any:
        seen.update(model=model, gpu=gpu, settings=settings)
        return estimate(model, gpu, settings)
    try:
        with _estimate_as(capture):
            estimate_case(case)
    except Exception as exc:  # the planner may still answer (or fail the same way)
        print(json.dumps({"id": f"cal/{name}/setup", "error": f"{type(exc).__name__}: {exc}"}))
        if not seen:
            return
    m, g, s = seen["model"], seen["gpu"], seen["settings"]
    _record(f"cal/{name}/estimate", lambda: estimate(m, g, s))
    logged = case.get("logged", {})
    failure = next((f for f in Failure if f.value == logged.get("outcome")), None)
    kv = logged.get("kv_cache_tokens")
    requests = {
        "plain": BudgetRequest(m, g, s),
        "logged": BudgetRequest(m, g, s, failure=failure, logged_kv_tokens=kv if isinstance(kv, int) else None),
        "fp8_t16": BudgetRequest(m, g, s, policy=fp8, target_concurrency=16),
        "capture": BudgetRequest(m, g, s, failure=Failure.CUDAGRAPH_CAPTURE_OOM),
        "t32_node2": BudgetRequest(m, g, s, target_concurrency=32, node_gpus=2),
        "weights_oom": BudgetRequest(m, g, s, failure=Failure.OOM_LOADING_WEIGHTS),
        "profile_oom": BudgetRequest(m, g, s, failure=Failure.PROFILE_OOM, target_concurrency=4),
        "t1_fp8": BudgetRequest(m, g, s, policy=fp8, target_concurrency=1),
    }
    for kind, req in requests.items():
        _record(f"cal/{name}/{kind}", lambda req=req: plan_budget(req))


@contextlib.contextmanager
def _estimate_as(fn: Callable[..., Any]) -> Any:
    """``calibration.estimate_case`` calling ``fn`` instead of ``estimate`` (to see the settings it builds)."""
    from vllm_remedy.vllm.memory import calibration
    saved = calibration.estimate
    calibration.estimate = fn  # type: ignore[assignment]
    try:
        yield
    finally:
        calibration.estimate = saved  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", action="append", default=[], metavar="NAME=SRC",
                        help="a checkout's src to compare (exactly two)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    import subprocess
    arms = parse_arms(args.arm)
    if len(arms) != 2:
        raise SystemExit("give two --arm NAME=SRC")
    got = []
    for name, src in arms:
        done = subprocess.run([sys.executable, __file__, "--child"], env=env_for(src), capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name} failed:\n{done.stderr}")
        got.append([json.loads(line) for line in done.stdout.splitlines()])
    (a, _), (b, _) = arms
    if [r["id"] for r in got[0]] != [r["id"] for r in got[1]]:
        raise SystemExit(f"{a} and {b} ran different grids")
    differ = [x["id"] for x, y in zip(*got, strict=True) if x != y]
    print(f"{len(got[0])} records ({len(BENCH) * 2} CLI runs, {len(got[0]) - len(BENCH) * 2} estimates and plans): "
          f"{len(differ)} differ between {a} and {b}")
    for cid in differ:
        print(f"  {cid}")
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
