"""deploys/restore.py on a multi-node vLLM LeaderWorkerSet, through the real pyinfra CLI on the rehearsal cluster:
the runbook's bad rollout (a max-model-len whose KV cache does not fit) is rolled back to the previous
ControllerRevision in one run, exactly as the dry run showed; a rerun does nothing; an edit made after the plan is
refused; bad input is one line naming the host, with nothing changed."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import threading
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.lws_world import (
    BAD_ARGS,
    HOST,
    NAME,
    RESTORE,
    install_crd,
    inventory,
    patch,
    plain_lws,
    read,
    start_set,
    vllm_lws,
)
from fixtures.pyinfra_run import Rehearsal, host_lines
from vllm_remedy.kube.diff import unified_template_diff
from vllm_remedy.kube.errors import ConflictError

rehearsal = pyinfra_run.rehearsal


def test_the_bad_rollout_is_restored_in_one_run_as_the_dry_run_showed(rehearsal: Rehearsal, tmp_path: Path) -> None:
    good = start_set(rehearsal)
    bad = read(rehearsal)
    dry = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "--dry", timeout=300)
    assert dry.returncode == 0, dry.stderr
    shown = "\n".join(host_lines(dry.stderr, HOST))
    assert "roll back leaderworkerset llm/qwen-lws from revision 2 to revision 1 (" in shown
    assert "revision 1: prediction on NVIDIA-L40S: fits" in shown and "(TP × PP = 2 GPUs over 2 pods)" in shown
    assert read(rehearsal)["metadata"]["resourceVersion"] == bad["metadata"]["resourceVersion"]  # dry: no write

    got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert any(line.startswith("wait for revision 1 to roll out: leaderworkerset qwen-lws: 1 groups of 2 pods "
                               "ready after ") for line in lines), lines
    after = read(rehearsal)
    assert after["spec"]["leaderWorkerTemplate"] == good["spec"]["leaderWorkerTemplate"]
    applied = unified_template_diff(bad["spec"]["leaderWorkerTemplate"], after["spec"]["leaderWorkerTemplate"])
    diff = [line.strip() for line in applied.rstrip("\n").splitlines()]
    assert diff and all(line in shown.splitlines() for line in diff)  # the dry run's diff is the change made
    changed = [line.split() for line in applied.splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert changed == [["-", "-", "'131072'"], ["+", "-", "'32768'"]]
    status = after["status"]
    assert (status["readyReplicas"], status["updatedReplicas"]) == (1, 1)

    again = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y", timeout=300)
    assert again.returncode == 0, again.stderr
    assert ("noop: nothing to restore: no pod of leaderworkerset llm/qwen-lws's current template is crash-looping"
            in host_lines(again.stderr, HOST))
    assert read(rehearsal)["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]


def test_an_edit_between_plan_and_write_is_refused(rehearsal: Rehearsal, tmp_path: Path) -> None:
    start_set(rehearsal)
    proc = subprocess.Popen([sys.executable, "-m", "pyinfra", inventory(tmp_path), RESTORE], cwd=rehearsal.tmp,
                            env=rehearsal.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stderr is not None
    err: list[str] = []
    shown = threading.Event()

    def reader() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(line)
            if "reflect the state defined by the input operations" in line:
                shown.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    assert shown.wait(120), "".join(err)
    for _ in range(20):  # at the prompt: a colleague annotates the set (status writes may race the read)
        try:
            edited = patch(rehearsal, [{"op": "add", "path": "/metadata/annotations",
                                        "value": {"oncall.example.com/owner": "someone-else"}}])
            break
        except ConflictError:
            continue
    proc.stdin.write("\n")
    proc.stdin.close()
    code = proc.wait(180)
    thread.join(10)
    lines = host_lines("".join(err), HOST)
    assert code != 0, lines
    failed = [line for line in lines if "changed since it was read" in line]
    assert len(failed) == 1 and failed[0].startswith("roll back leaderworkerset llm/qwen-lws from revision 2"), lines
    after = read(rehearsal)
    assert after["spec"] == edited["spec"] and after["metadata"]["annotations"] == {
        "oncall.example.com/owner": "someone-else"}
    assert after["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"] == BAD_ARGS


def _one_line(got: subprocess.CompletedProcess[str], host: str) -> str:
    assert got.returncode != 0
    assert "Traceback" not in got.stderr
    lines = [line for line in host_lines(got.stderr, host) if line]
    assert len(lines) == 1, got.stderr
    return lines[0]


def test_an_unknown_kind_is_one_line_naming_the_host(rehearsal: Rehearsal, tmp_path: Path) -> None:
    unknown = "@k8s/rehearsal/llm/daemonset/qwen"
    got = rehearsal.pyinfra(inventory(tmp_path, unknown), RESTORE, "-y")
    assert got.returncode != 0 and "Traceback" not in got.stderr
    assert f"{unknown}: unknown kind 'daemonset'; expected one of deployment, statefulset, leaderworkerset, " \
        "inferenceservice" in pyinfra_run.plain(got.stderr)


def test_a_cluster_without_the_crd_is_one_line_naming_the_host(rehearsal: Rehearsal, tmp_path: Path) -> None:
    line = _one_line(rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y"), HOST)
    assert line == ("leaderworkerset llm/qwen-lws: kind LeaderWorkerSet (leaderworkersets.leaderworkerset.x-k8s.io) "
                    "is not served by context rehearsal: its API group or CRD is not installed"), line


def test_an_lws_without_vllm_is_one_line_naming_the_host_and_changes_nothing(rehearsal: Rehearsal,
                                                                            tmp_path: Path) -> None:
    install_crd(rehearsal.clusters["rehearsal"])
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                   body=plain_lws("web", replicas=1, size=2))
    before = read(rehearsal, "web")
    host = "@k8s/rehearsal/llm/leaderworkerset/web"
    line = _one_line(rehearsal.pyinfra(inventory(tmp_path, host), RESTORE, "-y"), host)
    assert line.startswith("leaderworkerset llm/web: no container runs a vLLM server (containers: web;"), line
    after = read(rehearsal, "web")  # its controller still writes status: compare what an edit would change
    assert (after["spec"], after["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])


def test_leader_and_worker_templates_that_disagree_on_memory_are_refused(rehearsal: Rehearsal, tmp_path: Path) -> None:
    lws = vllm_lws(NAME)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    worker = copy.deepcopy(lwt["leaderTemplate"]["spec"]["containers"][0])
    worker["args"] = [*worker["args"][:2], "16384", *worker["args"][3:]]
    lwt["workerTemplate"]["spec"]["containers"] = [{**worker, "name": "vllm-worker", "readinessProbe": None}]
    del lwt["workerTemplate"]["spec"]["containers"][0]["readinessProbe"]
    start_set(rehearsal, lws)
    bad = read(rehearsal)
    for flag in ("--dry", "-y"):  # refused in both, and --dry exits 1 as -y does: CI and the responder read it
        got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, flag, timeout=300)
        assert got.returncode == 1, (flag, got.stderr)
        [line] = [line for line in host_lines(got.stderr, HOST) if "disagree" in line]
        assert line.endswith("crash-loop and revision 1: leader and worker templates disagree on --max-model-len "
                             "(leader 32768, worker 16384); make them agree before remediating; nothing was "
                             "changed"), line
    after = read(rehearsal)
    assert (after["spec"], after["metadata"]["generation"]) == (bad["spec"], bad["metadata"]["generation"])
    assert json.dumps(after["spec"]).count("131072") == 1


def test_pinning_writes_the_leader_and_the_worker_template(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """An LWS with no GPU pin: both templates get the L40S nodeSelector in one guarded write, the group rolls out
    on it, and a rerun does nothing."""
    lws = vllm_lws(NAME)
    for key in ("leaderTemplate", "workerTemplate"):
        del lws["spec"]["leaderWorkerTemplate"][key]["spec"]["nodeSelector"]
    install_crd(rehearsal.clusters["rehearsal"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                   body=lws)
    pin = str(pyinfra_run.ROOT / "deploys" / "pin_gpu.py")
    got = rehearsal.pyinfra(inventory(tmp_path), pin, "-y", "--data", "gpu_product=NVIDIA-L40S", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert any(line.startswith("pin leaderworkerset llm/qwen-lws to nvidia.com/gpu.product=NVIDIA-L40S with 1 "
                               "GPU(s) per pod, leader and workers") for line in lines), lines
    assert any(line.startswith("pinned: prediction on NVIDIA-L40S: fits") for line in lines), lines
    lwt = read(rehearsal)["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        assert lwt[key]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}, key
    status = read(rehearsal)["status"]
    assert (status["readyReplicas"], status["updatedReplicas"]) == (1, 1)
    again = rehearsal.pyinfra(inventory(tmp_path), pin, "-y", "--data", "gpu_product=NVIDIA-L40S", timeout=300)
    assert again.returncode == 0, again.stderr
    assert any(line.startswith("noop: leaderworkerset llm/qwen-lws is already pinned to nvidia.com/gpu.product="
                               "NVIDIA-L40S") for line in host_lines(again.stderr, HOST)), again.stderr
