"""deploys/diagnose.py (runbook steps 2–3) through the real pyinfra CLI: a report, once per host, that changes
nothing but the crash record on the dying revision's ReplicaSet."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal, crash_heads, detected_changes
from fixtures.restore_world import DIAGNOSE, LOCAL, NAME, NS, RESTORE, host_out, incident, replicaset, settled
from vllm_remedy.remedies.diagnose import evidence_lines

rehearsal = pyinfra_run.rehearsal
exact_rehearsal = pyinfra_run.exact_rehearsal  # vLLM's log compared with the prediction exactly

KV_ERROR = ("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (3.94 GiB).")
WHAT_CHANGED = [
    "step 3 — what changed: revision 14 (good) → revision 15 (bad); current revision crash-loops; good = pinned in "
    "policy",
    "--max-model-len: 16384 → (absent)",
    "nodeSelector cloud.google.com/gke-accelerator: (absent) → nvidia-l4",
    "nodeSelector nvidia.com/gpu.product: NVIDIA-L40S → (absent)",
    "tolerations: (absent) → [{effect: NoSchedule, key: nvidia.com/gpu, operator: Exists}]",
    "step 3 — GPUs:",
]


def test_incident_report_names_the_error_what_changed_and_the_gpus(exact_rehearsal: Rehearsal) -> None:
    rehearsal = exact_rehearsal
    incident(rehearsal)
    before = settled(rehearsal)
    got = rehearsal.pyinfra(LOCAL, DIAGNOSE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    start = lines.index(WHAT_CHANGED[0])
    assert lines[start:start + len(WHAT_CHANGED)] == WHAT_CHANGED
    gpus = [line for line in lines[start + len(WHAT_CHANGED):] if line.startswith("pod ")]  # GPU tables between
    pods = sorted(p["metadata"]["name"] for p in rehearsal.client().list_pods(NS, "app=llama-8b"))
    nodes = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in rehearsal.client().list_pods(NS, "app=llama-8b")}
    # a crash-looping vLLM may be starting during the exporter's scrape: then its device cannot be split (unknown)
    beside = ("no other pod requests a GPU here; memory beside vLLM's own on GPU 0: unknown while vLLM runs there "
              "(the exporter reports the whole device; vLLM's own free-memory line, when it logs one, says what was in "
              "use before it loaded)")
    assert len(gpus) == len(pods), gpus
    for pod, line in zip(pods, gpus, strict=True):
        head = (f"pod {pod} (revision 15): node {nodes[pod]}, NVIDIA-L4 23034 MiB, 1/1 GPUs requested; "
                "other GPU consumers: ")
        assert line in (head + "none", head + beside), line
    assert f"step 2 — startup log: 0/2 pods Ready, crash-looping: {', '.join(pods)}" in lines
    for pod in pods:
        head = crash_heads(lines, f"{pod}/vllm")
        assert len(head) == 1 and head[0].endswith(": max_len_exceeds_kv — model weights 15.06 GiB, "
                                                   "max-model-len 131072"), lines
    evidence = [line for line in lines if line.startswith("| ")]
    assert len(evidence) == 4
    assert sum(KV_ERROR in line for line in evidence) == 2
    assert sum("Model loading took 15.0570 GiB and 72.228162 seconds" in line for line in evidence) == 2
    assert lines.count("No changes") == 1
    after = rehearsal.client().get_deployment(NS, NAME)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    crashed = replicaset(rehearsal, 15)["metadata"]["annotations"]["vllm-remedy.io/crashed"]
    assert '"failure":"max_len_exceeds_kv"' in crashed  # Events expire after an hour; this record does not


def test_report_prints_once_in_dry_and_prompted_runs_and_yields_nothing(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    for args in (["--dry"], []):
        got = rehearsal.pyinfra(LOCAL, DIAGNOSE, *args, stdin="\n")
        assert got.returncode == 0, got.stderr
        lines = host_out(got.stderr)
        assert lines.count(WHAT_CHANGED[0]) == 1, (args, lines)
        changes = detected_changes(got.stderr)
        assert changes["Read the startup log and what changed"] == ("-", "-")  # the report changes nothing
        assert changes["Record crash-looping revisions on their ReplicaSets"] != ("-", "-")  # the record would
        recorded = "vllm-remedy.io/crashed" in replicaset(rehearsal, 15)["metadata"]["annotations"]
        assert recorded == (args == []), args  # --dry writes nothing; Enter at the prompt writes the record


def test_after_restore_the_report_compares_the_restored_revision_with_the_bad_one(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    assert rehearsal.pyinfra(LOCAL, RESTORE, "-y").returncode == 0
    got = rehearsal.pyinfra(LOCAL, DIAGNOSE, "-y")
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    start = lines.index("step 3 — what changed: revision 15 (previous) → revision 16 (current); "
                        "current revision is not crash-looping")
    assert lines[start + 1] == "--max-model-len: (absent) → 16384"
    assert "step 2 — startup log: 2/2 pods Ready, crash-looping: none" in lines


def test_evidence_is_the_runbook_grep_tail() -> None:
    log = "\n".join([f"INFO # GPU blocks: {i}" for i in range(25)] + ["INFO unrelated", "ERROR CUDA out of memory."])
    got = evidence_lines(log)
    assert len(got) == 20
    assert got[-1] == "ERROR CUDA out of memory."
    assert got[0] == "INFO # GPU blocks: 6"
