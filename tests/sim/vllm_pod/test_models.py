"""The rehearsal cluster's vLLM pods and models outside the catalog, and versions newer than the newest modelled.

A world ships config.json files (``models:`` in its seed) the way a Hub would serve them: a pod serving one starts
with the memory model's numbers for it, where it used to be refused with vLLM's "Invalid repository ID" — which
stays for a model nothing has. A vLLM image whose release was not modelled says, in the pod's own log, that its rules
are extrapolated; one naming no vLLM version (``:latest``) that it runs the newest release's rules.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG
from vllm_remedy.errors import UserError
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import install
from vllm_remedy.sim.vllm_pod.reality import EXACT
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.startup_log import parse_startup_log

SHIPPED = "acme-corp/SmolLM2-1.7B-Rehearsal"  # a name nothing else resolves: the world's copy is the only source


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster("t", clock=Clock(speed=600), reality=EXACT)  # compares logs with estimate() number for number
    install(c)
    c.store.create("nodes", make_node({"name": "l40s-1", "gpu": {"product": "NVIDIA-L40S", "count": 2}}, "t"))
    c.apply_seed({"models": [{"id": SHIPPED, "config": SMOLLM2_CONFIG}]})
    c.start()
    yield c
    c.stop()


def pod(name: str, model: str, image: str = "vllm/vllm-openai:v0.19.0") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": image, "command": ["vllm", "serve"],
                                     "args": [model, "--max-model-len", "8192"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def logged(c: Cluster, name: str, text: str, previous: bool = False) -> bool:
    try:
        return text in c.read_log("llm", name, previous=previous)
    except Exception:  # no container yet
        return False


def test_a_model_the_world_ships_starts_with_the_memory_models_numbers(cluster):
    cluster.store.create("pods", pod("shipped", SHIPPED))
    assert cluster.wait_for(lambda: logged(cluster, "shipped", "GPU KV cache size"), 8)
    report = parse_startup_log(cluster.read_log("llm", "shipped"))
    spec = catalog.ModelSpec.from_hf_config(SMOLLM2_CONFIG, SHIPPED)
    est = estimate(spec, catalog.gpu("NVIDIA-L40S"), EngineSettings.from_flags({"max-model-len": "8192"}, "0.19.0"))
    assert (report.model, report.kv_cache_tokens) == (SHIPPED, est.kv_cache_tokens)


def test_a_model_nothing_has_is_still_an_invalid_repository(cluster):
    cluster.store.create("pods", pod("nowhere", "acme-corp/NoSuch-7B"))
    assert cluster.wait_for(lambda: logged(cluster, "nowhere", "Invalid repository ID or local directory specified: "
                                           "'acme-corp/NoSuch-7B'", previous=True)
                            or logged(cluster, "nowhere", "Invalid repository ID"), 8)


@pytest.mark.parametrize(("image", "warning"), [
    ("vllm/vllm-openai:v0.35.0", "vLLM 0.35.0 is newer than the newest modelled release: memory rules extrapolated "
                                 "from 0.34.0"),
    ("vllm/vllm-openai:v0.34.1", "vLLM 0.34.1 is newer than the newest modelled release: memory rules extrapolated "
                                 "from 0.34.0"),
    ("vllm/vllm-openai:v0.33.2", "vLLM 0.33.2 is newer than the last modelled 0.33 release: memory rules "
                                 "extrapolated from 0.33.0"),
    ("vllm/vllm-openai:latest", "the image names no vLLM version: memory rules of the newest release, 0.34.0"),
    ("vllm/vllm-openai:v1.0.0", "vLLM 1.0.0 is newer than the newest modelled release: memory rules extrapolated "
                                "from 0.34.0"),
    ("lmcache/vllm-openai:v0.3.7", "the image names no vLLM version: memory rules of the newest release, 0.34.0"),
    ("vllm/vllm-openai:v0.34.0", None), ("vllm/vllm-openai:v0.21.0", None)])
def test_a_release_not_modelled_or_no_version_says_so_in_the_pods_log(cluster, image, warning):
    """Where the rehearsal's rules are not the release's own (extrapolated, or the newest for an image naming no
    version), the pod's log says so in one WARNING line before vLLM's arguments; a modelled release prints none."""
    cluster.store.create("pods", pod("new", "Qwen/Qwen2.5-7B-Instruct", image))
    assert cluster.wait_for(lambda: logged(cluster, "new", "GPU KV cache size"), 8)
    said = [line for line in cluster.read_log("llm", "new").splitlines() if "[vllm-remedy rehearsal]" in line]
    assert [line.split("[vllm-remedy rehearsal] ", 1)[1] for line in said] == ([warning] if warning else []), said
    assert all(" WARNING " in line for line in said), said


def test_a_seed_model_without_a_config_is_one_line(cluster):
    with pytest.raises(UserError, match=r"^seed: models\[0\]: expected \{id: <org/name>, config: "):
        cluster.apply_seed({"models": [{"id": "acme/x"}]})
