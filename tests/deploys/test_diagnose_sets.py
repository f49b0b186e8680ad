"""deploys/diagnose.py on a StatefulSet and a LeaderWorkerSet, through the real pyinfra CLI on the rehearsal cluster:
the same report as a Deployment's (class and grep lines of each crashed container, the flag diff between
revisions read from ControllerRevisions, the GPUs), exit 0, the set's spec unchanged and the crash recorded on the
dying revision's ControllerRevision only."""

from __future__ import annotations

import copy
from pathlib import Path

from fixtures import lws_world, pyinfra_run, sts_world
from fixtures.pyinfra_run import ROOT, Rehearsal, crash_heads, crash_on_start, detected_changes, host_lines
from vllm_remedy.kube.client import JSON_PATCH
from vllm_remedy.kube.patch import json_patch

rehearsal = pyinfra_run.rehearsal
DIAGNOSE = str(ROOT / "deploys" / "diagnose.py")
CRASHED = "vllm-remedy.io/crashed"


def bad_flag_rollout(rehearsal: Rehearsal) -> dict:
    """Revision 1 serves; revision 2 raises --max-model-len to 29000 and dies of it on llama-sts-1 (vLLM's real
    "max seq len ... larger than ... KV cache" log); the set then."""
    sts_world.llama_set(rehearsal)
    client = rehearsal.client()
    current = client.request("GET", sts_world.STS_PATH)
    bad = copy.deepcopy(current)
    bad["spec"]["template"]["metadata"]["annotations"] = crash_on_start(sts_world.MAX_LEN_LOG.read_text())
    args = bad["spec"]["template"]["spec"]["containers"][0]["args"]
    args[args.index("--max-model-len") + 1] = "29000"
    client.request("PATCH", sts_world.STS_PATH, body=json_patch(current, bad), content_type=JSON_PATCH)
    sts_world.crash_looping_on(rehearsal, "llama-sts-1")
    return sts_world.sts(rehearsal)


def test_a_crash_looping_statefulset_is_diagnosed_and_left_as_it_was(rehearsal: Rehearsal, tmp_path: Path) -> None:
    before = bad_flag_rollout(rehearsal)
    revisions = sts_world.revision_names(rehearsal)
    dry = rehearsal.pyinfra(sts_world.inventory(tmp_path), DIAGNOSE, "--dry", timeout=300)
    assert dry.returncode == 0, dry.stderr
    assert host_lines(dry.stderr, sts_world.STS_HOST).count("step 3 — GPUs:") == 1  # the report, once
    assert detected_changes(dry.stderr)["Read the startup log and what changed"] == ("-", "-")
    assert sts_world.revision_names(rehearsal) == revisions  # --dry records nothing
    got = rehearsal.pyinfra(sts_world.inventory(tmp_path), DIAGNOSE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, sts_world.STS_HOST)
    assert "step 2 — startup log: 1/2 pods Ready, crash-looping: llama-sts-1" in lines, lines
    [head] = crash_heads(lines, "llama-sts-1/vllm")
    assert ": max_len_exceeds_kv — model weights 14.99 GiB" in head, head
    assert any(line.startswith("| The model's max seq len (29000) is larger than the maximum number of tokens")
               for line in lines), lines
    start = lines.index("step 3 — what changed: revision 1 (good) → revision 2 (bad); current revision crash-loops; "
                        "good = newest earlier revision with no evidence against it")
    assert lines[start + 1] == "--max-model-len: 16384 → 29000", lines[start:]
    assert any(line.startswith("pod llama-sts-1 (revision 2): node gpu-l40s-") for line in lines), lines
    # the DCGM exporter read by the set's own selector: its GPU table maps the device to the set's pod
    assert any(line.startswith("GPU 0 ") and "(NVIDIA L40S): used " in line and "/llama-sts-" in line
               for line in lines), lines
    after = sts_world.sts(rehearsal)
    assert (after["spec"], after["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])
    assert after["metadata"].get("annotations") == before["metadata"].get("annotations")
    now = sts_world.revision_names(rehearsal)
    assert '"failure":"max_len_exceeds_kv"' in now[2]["metadata"]["annotations"][CRASHED]
    assert CRASHED not in (now[1]["metadata"].get("annotations") or {})
    assert now[1]["metadata"]["resourceVersion"] == revisions[1]["metadata"]["resourceVersion"]


def test_a_crash_looping_leaderworkerset_is_diagnosed_leader_and_workers(rehearsal: Rehearsal,
                                                                         tmp_path: Path) -> None:
    """The leader's flag diff and the worker template's, the group's leader and worker pods named and placed."""
    lws_world.start_set(rehearsal)
    before = lws_world.read(rehearsal)
    got = rehearsal.pyinfra(lws_world.inventory(tmp_path), DIAGNOSE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, lws_world.HOST)
    assert lines[lines.index("step 2 — startup log: 1/2 pods Ready, crash-looping: qwen-lws-0") + 1] == \
        "group 0: qwen-lws-0 (leader), qwen-lws-0-1 (worker)", lines
    [head] = crash_heads(lines, "qwen-lws-0/vllm-leader")
    assert head.endswith(": max_len_exceeds_kv — model weights 30.73 GiB, max-model-len 131072"), head
    assert sum("larger than the available KV cache memory" in line for line in lines if line.startswith("| ")) == 1
    start = lines.index("step 3 — what changed: revision 1 (good) → revision 2 (bad); current revision crash-loops; "
                        "good = newest earlier revision with no evidence against it")
    assert lines[start + 1:start + 4] == ["--max-model-len: 32768 → 131072",
                                          "step 3 — worker template: revision 1 → revision 2",
                                          "no change in the compared fields"], lines[start:]
    for pod in ("qwen-lws-0", "qwen-lws-0-1"):
        assert any(line.startswith(f"pod {pod} (revision 2): node gpu-l40s-") for line in lines), lines
    after = lws_world.read(rehearsal)
    assert (after["spec"], after["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])
    assert after["metadata"].get("annotations") == before["metadata"].get("annotations")
    client = rehearsal.client()
    revisions = client.request("GET", client.object_path("llm", "controllerrevisions"),
                               query=[("labelSelector", f"leaderworkerset.sigs.k8s.io/name={lws_world.NAME}")])
    crashed = {int(r["revision"]): (r["metadata"].get("annotations") or {}).get(CRASHED) for r in revisions["items"]}
    assert crashed[1] is None and '"failure":"max_len_exceeds_kv"' in crashed[2], crashed
