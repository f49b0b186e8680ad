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

from fixtures.sim_world import l40s_pod_cluster
from fixtures.vllm_deployment import manifest
from vllm_remedy.sim.cluster import Cluster

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"
PHI3_128K = "microsoft/Phi-3-mini-128k-instruct"
V1_OFF = ["--max-model-len", "16384", "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"]
V0_WINDOW = ["--max-model-len", "65536", "--max-num-batched-tokens", "4096"]


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


@pytest.mark.parametrize(("model", "args", "tag", "length"), [
    pytest.param(QWEN7, V1_OFF, "v0.19.0", 16384, id="v1-0.19.0-no-enable-chunked-prefill"),
    pytest.param(PHI3_128K, V0_WINDOW, "v0.6.5", 65536, id="v0-0.6.5-sliding-window-above-32k"),
])
def test_check_predicts_it_the_rehearsal_crashes_on_it_and_the_fix_starts(cli, tmp_path, model, args, tag, length):
    path = manifest(tmp_path, args, gpu="NVIDIA-L40S", image=f"vllm/vllm-openai:{tag}", model=model)
    out = cli("check", "-f", path)
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


@pytest.mark.parametrize(("tag", "refused"), [("v0.10.2", False), ("v0.11.1", True), ("v0.34.0", True)])
def test_check_follows_the_release(cli, tmp_path, tag, refused):
    """0.10.2's V1 chunks whatever the flag says; from 0.11.1 the flag holds and the batch is refused."""
    path = manifest(tmp_path, V1_OFF, gpu="NVIDIA-L4", image=f"vllm/vllm-openai:{tag}", model=QWEN7)
    out = cli("check", "-f", path)
    assert ("predicted config_refused" in out.stdout) is refused, out.stdout + out.stderr
    if refused:
        assert out.returncode == 1 and "--max-num-batched-tokens 16384" in out.stdout, out.stdout
