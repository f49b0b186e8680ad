"""A rehearsal pod running vLLM's image as a UID of its own (``runAsUser``, no HOME: "/"), whose Hugging Face cache
is then ``/.cache/huggingface/hub`` on the container's root-owned filesystem: huggingface_hub's download of config.json
dies at its first mkdir with errno 13, and transformers raises its "PermissionError at /.cache when downloading ..."
from it (``sim.vllm_pod.hub_cache_denied``, measured with transformers 4.57.1 / huggingface_hub 0.35.3 and 5.0.0 /
1.33.0 as a non-root user). ``diagnose`` reads the log back as ``cache_not_writable``. End to end: the served cluster,
the kubernetes client, the pods asking tests/fixtures/hf_hub_server, the real CLI. Before, every such pod started."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import ended, served

MODEL = "acme-corp/SmolLM2-Cache-Denied"
UID = 1000680000  # an OpenShift-style arbitrary UID: not in the image's /etc/passwd
ERRNO = "PermissionError: [Errno 13] Permission denied: '/.cache'"
SAID = f"OSError: PermissionError at /.cache when downloading {MODEL}. Check cache directory permissions."


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


def start(api: Any, name: str, release: str, uid: int | None = UID, env: dict[str, str] | None = None,
          cache_volume: bool = False, container_uid: int | None = None) -> tuple[str, int | None]:
    container: dict[str, Any] = {"name": "vllm", "image": f"vllm/vllm-openai:v{release}",
                                 "args": ["--model", MODEL, "--max-model-len", "4096"],
                                 "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    if container_uid is not None:  # the container's own user overrides the pod's
        container["securityContext"] = {"runAsUser": container_uid}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    spec: dict[str, Any] = {"containers": [container]}
    if uid is not None:
        spec["securityContext"] = {"runAsUser": uid}
    if cache_volume:
        container["volumeMounts"] = [{"name": "hf", "mountPath": "/.cache"}]
        spec["volumes"] = [{"name": "hf", "emptyDir": {}}]
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
    return ended(api, name, "vllm")


@pytest.mark.parametrize("release", ["0.34.0", "0.11.0", "0.8.5"])
def test_a_user_who_may_not_create_the_cache_ends_in_errno_13(api, hub, cli, tmp_path: Path, release: str) -> None:
    log, code = start(api, f"denied-{release.replace('.', '-')}", release)
    assert code == 1, log[-2000:]
    assert ERRNO in log and SAID in log, log[-3000:]
    assert '  File "<frozen os>", line 225, in makedirs' in log, log[-3000:]
    saved = tmp_path / "pod.log"
    saved.write_text(log)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["reason"]) == ("model_unavailable", "cache_not_writable"), data


def test_root_a_writable_home_or_an_empty_dir_start(api, hub) -> None:
    for name, kwargs in (("root", {"uid": None}), ("shm-home", {"env": {"HF_HOME": "/dev/shm/hf"}}),
                         ("empty-dir", {"cache_volume": True}), ("container-root", {"container_uid": 0})):
        log, code = start(api, f"allowed-{name}", "0.34.0", **kwargs)
        assert code is None and "GPU KV cache size" in log, (name, log[-2000:])
