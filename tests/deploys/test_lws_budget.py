"""deploys/budget.py on a multi-node vLLM LeaderWorkerSet, through the real pyinfra CLI on the rehearsal cluster: the
planner's smallest change for the group's engine (the 32B distill split over two L40S by pipeline parallelism) written
into the leader's and the workers' templates in one guarded write, exactly as --dry showed, and waited for until every
group is Ready; a rerun does nothing; a colleague's edit at the prompt is refused; nothing predicted to fit is one
line and no write."""

from __future__ import annotations

import copy
import time
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.lws_remedy import (
    BUDGET,
    EAGER,
    EXPIRES,
    colleague_edits_at_the_prompt,
    dry_then_apply,
    edits,
    inventory,
    lines,
    lwt,
    serve,
)
from fixtures.lws_world import BAD_ARGS, GOOD_ARGS, NAME, read, start_set, vllm_lws
from fixtures.pyinfra_run import Rehearsal
from vllm_remedy.kube.annotations import parse_rfc3339

rehearsal = pyinfra_run.rehearsal
WHERE = f"leaderworkerset llm/{NAME}"


def _leader_args(obj: dict) -> list[str]:
    return lwt(obj)["leaderTemplate"]["spec"]["containers"][0]["args"]


def test_a_crash_looping_set_gets_the_smallest_change_and_every_group_is_ready(rehearsal: Rehearsal,
                                                                               tmp_path: Path) -> None:
    start_set(rehearsal)  # max-model-len 131072: its KV cache does not fit beside half the weights
    bad = read(rehearsal)
    inv = inventory(tmp_path)
    dry, got = dry_then_apply(rehearsal, inv, BUDGET, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    shown = lines(dry)
    assert any(line.startswith(f"budget {WHERE}, leader and workers: --max-model-len ") and "(max-model-len, rung 1 "
               in line for line in shown), shown
    assert any(line.startswith("prediction on NVIDIA-L40S: fits") and line.endswith("(TP × PP = 2 GPUs over 2 pods)")
               for line in shown), shown
    assert any(line.startswith(f"wait for {WHERE} to roll out: leaderworkerset {NAME}: 1 groups of 2 pods ready after ")
               for line in lines(got)), lines(got)
    after = read(rehearsal)
    length = _leader_args(after)[_leader_args(after).index("--max-model-len") + 1]
    assert int(length) < 131072 and _leader_args(after) == [*BAD_ARGS[:2], length, *BAD_ARGS[3:]]
    assert lwt(after)["workerTemplate"] == lwt(bad)["workerTemplate"]  # workers only join Ray: no flags to follow
    notes = after["metadata"]["annotations"]
    assert notes["vllm-remedy.io/last-action"] == "budget"
    assert (after["status"]["readyReplicas"], after["status"]["updatedReplicas"]) == (1, 1)

    again = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
    assert again.returncode == 0, again.stderr
    assert any(line.startswith(f"noop: {WHERE} fits on NVIDIA-L40S with headroom and an explicit --max-model-len")
               for line in lines(again)), again.stderr
    assert edits(read(rehearsal)) == edits(after)


def test_workers_that_run_vllm_flags_too_get_the_same_change(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """A worker template carrying the engine's flags (leader and workers must agree on every flag that moves memory)
    gets the same --max-model-len in the same write."""
    lws = vllm_lws(NAME, args=[*GOOD_ARGS[:2], "32768", *GOOD_ARGS[3:]])
    template = lws["spec"]["leaderWorkerTemplate"]
    worker = copy.deepcopy(template["leaderTemplate"]["spec"]["containers"][0])
    del worker["readinessProbe"]
    template["workerTemplate"]["spec"]["containers"] = [{**worker, "name": "vllm-worker"}]
    serve(rehearsal, lws)
    got = rehearsal.pyinfra(inventory(tmp_path), BUDGET, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    after = lwt(read(rehearsal))
    leader, worker_args = (after[k]["spec"]["containers"][0]["args"] for k in ("leaderTemplate", "workerTemplate"))
    assert leader == worker_args and leader != GOOD_ARGS, (leader, worker_args)


def test_an_edit_at_the_prompt_is_refused_not_overwritten(rehearsal: Rehearsal, tmp_path: Path) -> None:
    start_set(rehearsal)
    got, edited = colleague_edits_at_the_prompt(rehearsal, inventory(tmp_path), BUDGET)
    assert got.returncode != 0, got.stderr
    failed = [line for line in lines(got) if "changed since it was read (HTTP 422); nothing was written" in line]
    assert len(failed) == 1 and failed[0].startswith(f"budget {WHERE}, leader and workers: "), got.stderr
    after = read(rehearsal)
    assert after["spec"] == edited["spec"] and _leader_args(after) == BAD_ARGS
    assert after["metadata"]["annotations"]["oncall.example.com/owner"] == "someone-else"
    assert "vllm-remedy.io/last-action" not in after["metadata"]["annotations"]


def test_nothing_predicted_to_fit_is_refused_in_one_line_and_nothing_changes(rehearsal: Rehearsal,
                                                                             tmp_path: Path) -> None:
    """The policy keeps max-model-len at 32768 or more and the card at L40S: no rung holds 8 concurrent requests."""
    start_set(rehearsal)
    before = read(rehearsal)
    inv = inventory(tmp_path, "flags:\n  max-model-len: {min: 32768}\ngpu:\n  products: [NVIDIA-L40S]\n")
    for flag in ("--dry", "-y"):  # a refusal fails the host in both: --dry exits 1 as -y does (CI reads it)
        got = rehearsal.pyinfra(inv, BUDGET, flag, timeout=300)
        assert got.returncode == 1 and "Traceback" not in got.stderr, got.stderr
        refused = [line for line in lines(got) if "is predicted to fit" in line]
        assert len(refused) == 1 and f"{WHERE}: " in refused[0] and "no change within policy" in refused[0], \
            got.stderr
    assert edits(read(rehearsal))[:2] == edits(before)[:2]
    assert "vllm-remedy.io/last-action" not in (read(rehearsal)["metadata"].get("annotations") or {})


def test_a_set_argo_cd_owns_is_refused_under_gitops_refuse(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The owner gate applies as for any kind: a direct write Argo CD would revert is refused, nothing written."""
    lws = vllm_lws(NAME)
    lws["metadata"]["labels"] = {"argocd.argoproj.io/instance": "llm-prod"}
    start_set(rehearsal, lws)
    before = read(rehearsal)
    inv = inventory(tmp_path, "gitops: refuse\n")
    for flag in ("--dry", "-y"):  # --dry exits non-zero as the run will
        got = rehearsal.pyinfra(inv, BUDGET, flag, timeout=300)
        assert got.returncode == 1 and "Traceback" not in got.stderr, got.stderr
        refused = [line for line in lines(got) if line.startswith(f"refused: {WHERE} is managed by Argo CD")]
        assert len(refused) == 1 and "nothing written" in refused[0], got.stderr
    assert edits(read(rehearsal))[:2] == edits(before)[:2] and _leader_args(read(rehearsal)) == BAD_ARGS


def test_an_unpinned_set_is_pinned_first_and_the_fix_is_planned_on_the_pin(rehearsal: Rehearsal,
                                                                           tmp_path: Path) -> None:
    """As for a Deployment: the policy's GPU product pinned in leader and workers, then the smallest change planned
    on the pinned set - two writes, --dry showing the second on what the first leaves. (The set serves at 32768, but
    its KV cache holds 1.44 requests of that length, not the 8 at peak; as for a Deployment, a pin is refused when the
    pinned set is predicted not to start, so the pin comes before a crash loop, not after.)"""
    lws = vllm_lws(NAME)
    for key in ("leaderTemplate", "workerTemplate"):
        del lws["spec"]["leaderWorkerTemplate"][key]["spec"]["nodeSelector"]
    serve(rehearsal, lws)
    inv = inventory(tmp_path, "gpu:\n  products: [NVIDIA-L40S]\n")
    dry, got = dry_then_apply(rehearsal, inv, BUDGET, expect_diffs=2)
    assert got.returncode == 0, got.stderr
    shown = lines(dry)
    pin = next(i for i, line in enumerate(shown) if line.startswith(f"pin {WHERE} to nvidia.com/gpu.product="))
    fix = next(i for i, line in enumerate(shown) if line.startswith(f"budget {WHERE}, leader and workers: "))
    assert pin < fix, shown
    after = read(rehearsal)
    for key in ("leaderTemplate", "workerTemplate"):
        assert lwt(after)[key]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}, key
    assert (after["status"]["readyReplicas"], after["status"]["updatedReplicas"]) == (1, 1)


def test_an_expired_toggle_on_an_unpinned_set_comes_off_in_the_run_that_pins_it(rehearsal: Rehearsal,
                                                                                tmp_path: Path) -> None:
    """Pin, then the fix planned on the pinned set with the expired toggle reverted: two writes, the second taking the
    revert in (one guarded write, not a revert and then a change), --dry planning each on what the one before
    leaves, as -y makes them."""
    lws = vllm_lws(NAME)
    for key in ("leaderTemplate", "workerTemplate"):
        del lws["spec"]["leaderWorkerTemplate"][key]["spec"]["nodeSelector"]
    serve(rehearsal, lws)
    got = rehearsal.pyinfra(inventory(tmp_path), EAGER, "-y", "--data", "eager_ttl=1m", timeout=300)
    assert got.returncode == 0, got.stderr
    client = rehearsal.client()
    while client.server_time() < parse_rfc3339(read(rehearsal)["metadata"]["annotations"][EXPIRES]):
        time.sleep(0.05)  # the rehearsal clock runs 600x: a cluster minute is 0.1 s
    inv = inventory(tmp_path, "gpu:\n  products: [NVIDIA-L40S]\n", name="pinned")
    dry, got = dry_then_apply(rehearsal, inv, BUDGET, expect_diffs=2)
    assert got.returncode == 0, got.stderr
    for run in (dry, got):
        said = lines(run)
        assert any(line.startswith(f"budget {WHERE}, leader and workers: ") and "; revert expired toggles: "
                   "enforce-eager: " in line for line in said), said
        assert any(line.startswith(f"noop: expired toggles on {WHERE} come off in the budget's write below: ")
                   for line in said), said
    writes = [line for line in lines(got) if ": written (resourceVersion " in line]
    assert len(writes) == 2 and writes[0].startswith(f"pin {WHERE}") and writes[1].startswith(f"budget {WHERE}"), \
        writes
    after = read(rehearsal)
    assert "--enforce-eager" not in _leader_args(after) and EXPIRES not in after["metadata"]["annotations"]
    assert after["metadata"]["annotations"]["vllm-remedy.io/last-action"] == "budget"
    assert lwt(after)["leaderTemplate"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert (after["status"]["readyReplicas"], after["status"]["updatedReplicas"]) == (1, 1)
