"""Memory held outside the vLLM pod, judged from the exporter's rows and the pods' states (pure)."""

from __future__ import annotations

from typing import Any

from vllm_remedy.remedies.held_memory import consumers, foreign

NS = "llm"


def pods(running: bool) -> dict[str, Any]:
    """The fact's ``pods``: stopped = the vLLM container ran at no moment of the scrape."""
    return {"p-1": {"stopped": not running}}


def gpu(index: str, used: float, *owners: tuple[str, str, str]) -> dict[str, Any]:
    return {"gpu": index, "uuid": f"GPU-{index}", "model": "NVIDIA L4", "used_mib": used, "free_mib": 23034 - used,
            "total_mib": 23034.0, "pods": [{"namespace": n, "pod": p, "container": c} for n, p, c in owners]}


def node(*gpus: dict[str, Any]) -> dict[str, Any]:
    return {"node": "n1", "exporter": "gpu-operator/e", "gpus": list(gpus), "unknown": None}


def test_a_vllm_pod_that_may_have_run_holds_its_own_gpu_and_idle_gpus_hold_nothing() -> None:
    row = node(gpu("0", 21000, (NS, "p-1", "vllm")), gpu("1", 4))
    assert foreign(row, pods(True), NS) == []
    # beside a running vLLM the device cannot be split: unknown, never "none"
    assert consumers("n1", [], {"nodes": {"n1": row}, "pods": pods(True)}, NS)[0] == (
        "no other pod requests a GPU here; memory beside vLLM's own on GPU 0: unknown while vLLM runs there (the "
        "exporter reports the whole device; vLLM's own free-memory line, when it logs one, says what was in use before "
        "it loaded)")
    idle = node(gpu("0", 100, (NS, "p-1", "vllm")), gpu("1", 4))
    assert consumers("n1", [], {"nodes": {"n1": idle}, "pods": pods(True)}, NS)[0] == "none"


def test_memory_on_the_pods_gpu_between_crashes_is_held_outside_it() -> None:
    (held,) = foreign(node(gpu("0", 6144, (NS, "p-1", "vllm"))), pods(False), NS)
    assert held.mib == 6144 and held.describe().startswith("6.00 GiB on GPU 0 (GPU-0, NVIDIA L4), mapped to "
                                                           "llm/p-1/vllm whose vLLM container is not running")


def test_another_pods_gpu_and_an_unmapped_busy_gpu_are_foreign() -> None:
    row = node(gpu("0", 21000, (NS, "p-1", "vllm")), gpu("1", 9000, ("ml", "train-0", "trainer")), gpu("2", 3000))
    held = foreign(row, pods(True), NS)
    assert [(h.gpu, h.mib) for h in held] == [("1", 9000), ("2", 3000)]
    assert held[0].holder == "held by ml/train-0/trainer"
    assert held[1].holder.startswith("mapped to no pod: a process outside Kubernetes")
    text, table = consumers("n1", ["ml/x (1 GPU)"], {"nodes": {"n1": row}, "pods": pods(True)}, NS)
    assert text.startswith("ml/x (1 GPU); 8.79 GiB on GPU 1") and len(table) == 3


def test_unknown_is_never_none() -> None:
    assert consumers("n1", [], None, NS)[0] == ("no other pod requests a GPU here; memory held outside "
                                                            "the pod: unknown — GPU memory was not read")
    row = {"node": "n1", "gpus": [], "unknown": "no DCGM exporter on node n1 (…)"}
    assert consumers("n1", ["ml/x (1 GPU)"], {"nodes": {"n1": row}}, NS)[0] == (
        "ml/x (1 GPU); memory held outside the pod: unknown — no DCGM exporter on node n1 (…)")
    assert consumers("n2", [], {"nodes": {"n1": row}}, NS)[0].endswith(
        "unknown — no GPU memory reading for node n2")
