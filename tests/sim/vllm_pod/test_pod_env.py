"""Rehearsal pods see VLLM_ALLOW_LONG_MAX_MODEL_LEN wherever a real kubelet and shell would give it to vLLM:
``valueFrom.configMapKeyRef`` / ``secretKeyRef``, ``envFrom`` (with its prefix), ``sh -c 'X=1 exec vllm serve ...'``
and ``export X=1`` in the script, ``env X=1 vllm serve`` in argv. Without it vLLM refuses the --max-model-len."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from fixtures.sim_world import l40s_pod_cluster
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.vllm_pod import env
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import classify, parse_startup_log

QWEN7 = "Qwen/Qwen2.5-7B-Instruct"  # max_position_embeddings 32768
ARGS = [QWEN7, "--max-model-len", "65536"]
VAR = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
WARNING = "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution"


CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vllm-env", "namespace": "llm"},
              "data": {VAR: "1", "ALLOW": "1"}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vllm-secret", "namespace": "llm"},
          "data": {"allow": base64.b64encode(b"true").decode()}}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with l40s_pod_cluster(4, ("configmaps", CONFIG_MAP), ("secrets", SECRET)) as c:
        yield c


def pod(name: str, **container: object) -> dict:
    spec = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"], "args": ARGS,
            "ports": [{"containerPort": 8000}], "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            "resources": {"limits": {"nvidia.com/gpu": "1"}}, **container}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [spec]}}


def _status(c: Cluster, name: str) -> dict:
    statuses = (c.store.get("pods", "llm", name).get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


SCRIPT = "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 exec vllm serve " + " ".join(ARGS)
CASES = {
    "config-map-key": {"env": [{"name": VAR, "valueFrom": {"configMapKeyRef": {"name": "vllm-env", "key": "ALLOW"}}}]},
    "secret-key": {"env": [{"name": VAR, "valueFrom": {"secretKeyRef": {"name": "vllm-secret", "key": "allow"}}}]},
    "env-from": {"envFrom": [{"configMapRef": {"name": "vllm-env"}}]},
    "env-from-prefix": {"envFrom": [{"prefix": "VLLM_", "configMapRef": {"name": "vllm-env"}}],
                        "env": [{"name": VAR, "value": "$(VLLM_ALLOW)"}]},
    "shell-prefix": {"command": ["sh", "-c", SCRIPT], "args": []},
    "shell-export": {"command": ["/bin/sh", "-c", f"export {VAR}=1\nexec vllm serve {' '.join(ARGS)}"], "args": []},
    "env-wrapper": {"command": ["env", f"{VAR}=1", "vllm", "serve"]},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_env_var_reaches_vllm_as_kubelet_and_the_shell_pass_it(cluster, case):
    cluster.store.create("pods", pod(case, **CASES[case]))
    assert cluster.wait_for(lambda: _status(cluster, case).get("ready") is True, 8), _status(cluster, case)
    text = cluster.read_log("llm", case)
    report = parse_startup_log(text)
    assert classify(report) is Failure.NONE and report.max_model_len == 65536
    assert any("WARNING" in line and WARNING in line for line in text.splitlines())


def test_a_missing_key_is_a_config_error_and_an_optional_one_still_refuses(cluster):
    missing = {"env": [{"name": VAR, "valueFrom": {"configMapKeyRef": {"name": "vllm-env", "key": "nope"}}}]}
    cluster.store.create("pods", pod("missing", **missing))
    assert cluster.wait_for(lambda: "CreateContainerConfigError" in str(_status(cluster, "missing").get("state")), 8)
    assert _status(cluster, "missing")["state"]["waiting"]["message"] == (
        "couldn't find key nope in ConfigMap llm/vllm-env")
    optional = {"env": [{"name": VAR, "valueFrom": {"configMapKeyRef": {
        "name": "vllm-env", "key": "nope", "optional": True}}}]}
    cluster.store.create("pods", pod("optional", **optional))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, "optional").get("state")), 8)
    assert classify(parse_startup_log(cluster.read_log("llm", "optional", previous=True))) \
        is Failure.MAX_LEN_EXCEEDS_MODEL


SERVE = "exec vllm serve " + " ".join(ARGS)
DROPPED = {  # the second hostile review's H1: real dash and bash leave the variable out of vLLM's env in each
    "after-false-and": f"false && export {VAR}=1; {SERVE}",
    "after-true-or": f"true || export {VAR}=1; {SERVE}",
    "in-a-pipeline": f"export {VAR}=1 | cat; {SERVE}",
    "in-the-background": f"export {VAR}=1 & {SERVE}",
    "in-a-subshell": f"( export {VAR}=1 ); {SERVE}",
    "in-an-uncalled-function": f"f() {{ export {VAR}=1; }}; {SERVE}",
}


@pytest.mark.parametrize("case", sorted(DROPPED))
def test_an_export_the_shell_drops_does_not_reach_vllm(cluster, case):
    cluster.store.create("pods", pod(case, command=["sh", "-c", DROPPED[case]], args=[]))
    assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(_status(cluster, case).get("state")), 8), \
        _status(cluster, case)
    assert classify(parse_startup_log(cluster.read_log("llm", case, previous=True))) is Failure.MAX_LEN_EXCEEDS_MODEL


def test_pod_env_orders_sources_as_kubelet_does():
    class Store:
        def find(self, resource: str, namespace: str, name: str) -> dict | None:
            return {"data": {"A": "from-map", "B": "b"}} if (resource, namespace) == ("configmaps", "ns") else None
    container = {"envFrom": [{"configMapRef": {"name": "m"}}],
                 "env": [{"name": "A", "value": "literal"}, {"name": "C", "value": "$(B)-$(D)"},
                         {"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}
    got = env.pod_env(container, {"metadata": {"name": "p", "namespace": "ns"}}, Store())
    assert got == {"A": "literal", "B": "b", "C": "b-$(D)", "P": "p"}
