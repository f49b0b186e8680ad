"""config_refused where chunked prefill is off by vLLM's own choice or by the flag, end to end: ``check`` and ``plan``
predict the refusal and raise the batch to the length; the rehearsal cluster's pod, reading the same manifest on its
own, crashes with vLLM's traceback, ``diagnose`` reads it back as config_refused, and the fix ``check`` proposes
starts. V1 keeps ``--no-enable-chunked-prefill`` from 0.11.1 (config/scheduler.py@0.11.1 ``verify_max_model_len``)
and ignores it before (engine/arg_utils.py@0.10.2); V0 leaves a sliding-window model unchunked above 32K
(engine/arg_utils.py@0.6.5: Phi-3-mini-128k's config.json carries ``sliding_window: 262144``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import Alone, judge_text
from fixtures.sim_world import l40s_pod_cluster
from fixtures.vllm_deployment import manifest
from vllm_remedy.sim.cluster import Cluster

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"
PHI3_128K = "microsoft/Phi-3-mini-128k-instruct"
V1_OFF = ["--max-model-len", "16384", "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"]
V0_WINDOW = ["--max-model-len", "65536", "--max-num-batched-tokens", "4096"]
REHEARSED = [
    pytest.param(QWEN7, V1_OFF, "v0.19.0", 16384, id="v1-0.19.0-no-enable-chunked-prefill"),
    pytest.param(PHI3_128K, V0_WINDOW, "v0.6.5", 65536, id="v0-0.6.5-sliding-window-above-32k"),
]
RELEASES = [("v0.10.2", False), ("v0.11.1", True), ("v0.34.0", True)]
#: Every (model, args, GPU, tag) `check` judges here, as one Deployment each of one file (``checked``).
CASES = [*((model, tuple(args), "NVIDIA-L40S", tag) for model, args, tag, _ in (p.values for p in REHEARSED)),
         *((QWEN7, tuple(V1_OFF), "NVIDIA-L4", tag) for tag, _ in RELEASES)]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, tuple[str, ...], str, str], Alone]:
    """Every case of ``CASES`` as one Deployment (case-N) of one file, judged by one real text `check` run (one CLI
    start instead of one per case: the suite's time budget), by (model, args, GPU, tag)."""
    tmp = tmp_path_factory.mktemp("chunked")
    docs = []
    for i, (model, args, gpu, tag) in enumerate(CASES):
        docs.append(yaml.safe_load(Path(manifest(tmp, list(args), gpu=gpu, image=f"vllm/vllm-openai:{tag}",
                                                 model=model)).read_text()))
        docs[-1]["metadata"]["name"] = f"case-{i}"
    alone = judge_text(docs, tmp)
    return {case: alone[f"case-{i}"] for i, case in enumerate(CASES)}


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


def _pod_from(path: str, name: str, args: list[str] | None = None) -> dict:
    """The manifest's pod template as a Pod in namespace llm (``args`` replacing the container's, when given)."""
    template = yaml.safe_load(Path(path).read_text())["spec"]["template"]
    container = dict(template["spec"]["containers"][0], ports=[{"containerPort": 8000}])
    if args is not None:
        container["args"] = args
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {**template["spec"], "containers": [container]}}


@pytest.mark.parametrize(("model", "args", "tag", "length"), REHEARSED)
def test_check_predicts_it_the_rehearsal_crashes_on_it_and_the_fix_starts(
        cli, tmp_path, checked, model, args, tag, length):
    path = manifest(tmp_path, args, gpu="NVIDIA-L40S", image=f"vllm/vllm-openai:{tag}", model=model)
    out = checked[(model, tuple(args), "NVIDIA-L40S", tag)]
    assert out.returncode == 1, out.stdout + out.stderr
    assert "start [error]: predicted config_refused on NVIDIA-L40S" in out.stdout, out.stdout
    assert f"--max-num-batched-tokens {length}" in out.stdout, out.stdout
    with l40s_pod_cluster(2) as cluster:
        cluster.store.create("pods", _pod_from(path, "refused"))
        assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, "refused").get("state")), 8)
        log = tmp_path / "refused.log"
        log.write_text(cluster.read_log("llm", "refused", previous=True))
        got = cli("diagnose", "--log", str(log), "-o", "json")
        assert got.returncode == 0, got.stderr
        data = json.loads(got.stdout)
        assert data["failure"] == "config_refused", data
        assert data["failure_detail"]["max_model_len"] == length, data["failure_detail"]
        fixed = ["--model", model, *[str(length) if a == "4096" else a for a in args]]
        cluster.store.create("pods", _pod_from(path, "fixed", fixed))
        assert cluster.wait_for(lambda: _status(cluster, "fixed").get("ready") is True, 8), _status(cluster, "fixed")


@pytest.mark.parametrize(("tag", "refused"), RELEASES)
def test_check_follows_the_release(checked, tag, refused):
    """0.10.2's V1 chunks whatever the flag says; from 0.11.1 the flag holds and the batch is refused."""
    out = checked[(QWEN7, tuple(V1_OFF), "NVIDIA-L4", tag)]
    assert ("predicted config_refused" in out.stdout) is refused, out.stdout + out.stderr
    if refused:
        assert out.returncode == 1 and "--max-num-batched-tokens 16384" in out.stdout, out.stdout
