"""deploys/confirm.py on a StatefulSet and a LeaderWorkerSet, through the real pyinfra CLI on the rehearsal cluster:
a healthy set's revision is marked known-good on its ControllerRevision — where restore reads it, so a later bad
rollout is rolled back to it first — once (a rerun writes nothing); a crash-looping one fails and marks nothing; the
mark is resourceVersion-guarded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures import lws_world, pyinfra_run, sts_world
from fixtures.budget_world import prompted_run
from fixtures.pyinfra_run import ROOT, Rehearsal, crash_on_start, host_lines
from fixtures.restore_world import FAST_POLL, fast_forward, wait_until
from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.kube.client import JSON_PATCH, MERGE_PATCH
from vllm_remedy.kube.lws_wait import wait_for_lws_rollout
from vllm_remedy.kube.sts_wait import wait_for_sts_rollout

rehearsal = pyinfra_run.exact_rehearsal  # confirm compares vLLM's logged concurrency with the policy's peak
CONFIRM = str(ROOT / "deploys" / "confirm.py")
KNOWN_GOOD = "vllm-remedy.io/known-good"


def stable(rehearsal: Rehearsal, selector: str, seconds: float = 31 * 60) -> None:
    """Every live pod of ``selector`` Ready for ``seconds`` of cluster time (confirm's default 30m, and then some)."""
    clock = rehearsal.clusters["rehearsal"].clock
    clock.set_speed(600.0)

    def ready_long_enough() -> bool:
        live = [p for p in rehearsal.client().list_pods("llm", selector) if not p["metadata"].get("deletionTimestamp")]
        conds = [next((c for c in p["status"].get("conditions") or [] if c["type"] == "Ready"), None) for p in live]
        return bool(live) and all(c is not None and c["status"] == "True"
                                  and clock.now() - parse_rfc3339(c["lastTransitionTime"]) >= seconds for c in conds)

    with fast_forward(clock):
        wait_until(ready_long_enough, 60, f"pods Ready for {seconds:.0f}s of cluster time", FAST_POLL)


def notes(revision: dict[str, Any]) -> dict[str, str]:
    return revision["metadata"].get("annotations") or {}


def lws_revisions(rehearsal: Rehearsal) -> dict[int, dict[str, Any]]:
    """Revision number → the LWS's ControllerRevision, as the API serves them now."""
    client = rehearsal.client()
    items = client.request("GET", client.object_path("llm", "controllerrevisions"),
                           query=[("labelSelector", f"leaderworkerset.sigs.k8s.io/name={lws_world.NAME}")])["items"]
    return {int(r["revision"]): r for r in items}


def marked(revisions: dict[int, dict[str, Any]]) -> list[int]:
    return sorted(n for n, r in revisions.items() if KNOWN_GOOD in notes(r))


def confirmed_twice(rehearsal: Rehearsal, inv: str, host: str, revisions: Any) -> tuple[dict[str, Any], list[str]]:
    """Confirm marks revision 1's ControllerRevision in cluster time; a rerun writes nothing. The marked one, and
    what the first run printed."""
    clock = rehearsal.clusters["rehearsal"].clock
    started = int(clock.now())
    got = rehearsal.pyinfra(inv, CONFIRM, "-y", timeout=300)
    finished = clock.now()
    assert got.returncode == 0, got.stderr
    first = revisions(rehearsal)[1]
    name = first["metadata"]["name"]
    lines = printed = host_lines(got.stderr, host)
    assert f"mark revision 1 ({name}) known-good: written (resourceVersion {first['metadata']['resourceVersion']})" \
        in lines, lines
    assert started <= parse_rfc3339(notes(first)[KNOWN_GOOD]) <= finished
    assert notes(first)[KNOWN_GOOD + "-reason"].startswith("confirmed: ok: revision 1: ")
    assert marked(revisions(rehearsal)) == [1]
    again = rehearsal.pyinfra(inv, CONFIRM, "-y", timeout=300)
    assert again.returncode == 0, again.stderr
    lines = host_lines(again.stderr, host)
    assert lines.count("No changes") == 4, lines  # revert toggles, record crashes, wait, mark
    assert f"noop: {host_where(host)}: revision 1 is already marked known-good" in lines
    assert revisions(rehearsal)[1]["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    return first, printed


def host_where(host: str) -> str:
    """``statefulset llm/llama-sts`` of ``@k8s/rehearsal/llm/statefulset/llama-sts``."""
    _, _, ns, kind, name = host.split("/")
    return f"{kind} {ns}/{name}"


# ---- StatefulSet ----

def sts_patch(rehearsal: Rehearsal, ops: list[dict[str, Any]]) -> None:
    client = rehearsal.client()
    sts = client.request("GET", sts_world.STS_PATH)
    guard = {"op": "test", "path": "/metadata/resourceVersion", "value": sts["metadata"]["resourceVersion"]}
    client.request("PATCH", sts_world.STS_PATH, body=[guard, *ops], content_type=JSON_PATCH)


def test_a_healthy_statefulset_is_marked_once_and_restore_returns_to_it_first(rehearsal: Rehearsal,
                                                                              tmp_path: Path) -> None:
    sts_world.llama_set(rehearsal)
    stable(rehearsal, "app=llama-sts")
    before = sts_world.sts(rehearsal)
    inv = sts_world.inventory(tmp_path)
    confirmed, lines = confirmed_twice(rehearsal, inv, sts_world.STS_HOST, sts_world.revision_names)
    for pod in ("llama-sts-0", "llama-sts-1"):
        assert f"ok: pod {pod}: maximum concurrency 12.08x vs peak 8 × 1 = 8.00" in lines, lines
        assert f"ok: pod {pod}: KV cache usage 0.0% (limit 90%)" in lines
    after = sts_world.sts(rehearsal)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # never written

    # revision 2 serves too (never confirmed), revision 3 crash-loops: restore goes to the confirmed revision 1
    sts_patch(rehearsal, [{"op": "add", "path": "/spec/template/spec/containers/0/env/-",
                           "value": {"name": "VLLM_TRY", "value": "2"}}])
    clock = rehearsal.clusters["rehearsal"].clock
    assert wait_for_sts_rollout(rehearsal.client(), "llm", "llama-sts", timeout=900, clock=clock, interval=5).ok
    sts_world.roll(rehearsal, crash_on_start(sts_world.MAX_LEN_LOG.read_text()))
    sts_world.crash_looping_on(rehearsal, "llama-sts-1")
    got = rehearsal.pyinfra(inv, sts_world.RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    summary = (f"roll back statefulset llm/llama-sts from revision 3 to revision 1 ({confirmed['metadata']['name']}) "
               "— chosen by rule: known-good mark")
    assert any(line.startswith(summary) for line in host_lines(got.stderr, sts_world.STS_HOST)), got.stderr
    assert sts_world.sts(rehearsal)["spec"]["template"] == before["spec"]["template"]


def test_a_crash_looping_statefulset_is_not_confirmed_and_nothing_is_marked(rehearsal: Rehearsal,
                                                                            tmp_path: Path) -> None:
    before = sts_world.bad_rollout(rehearsal)
    got = rehearsal.pyinfra(sts_world.inventory(tmp_path, "never"), CONFIRM, "-y", timeout=300)
    assert got.returncode != 0 and "Traceback" not in got.stderr
    lines = host_lines(got.stderr, sts_world.STS_HOST)
    wait = "wait for statefulset llm/llama-sts to roll out: crash-loop after "
    assert any(line.startswith(wait) for line in lines), lines
    assert marked(sts_world.revision_names(rehearsal)) == []
    assert sts_world.sts(rehearsal)["spec"] == before["spec"]


def test_a_colleagues_edit_at_the_prompt_refuses_the_mark(rehearsal: Rehearsal, tmp_path: Path) -> None:
    """The ControllerRevision is annotated between change detection and execute: the guarded mark is refused
    (resourceVersion), the colleague's annotation stands and no mark is written over it."""
    sts_world.llama_set(rehearsal)
    stable(rehearsal, "app=llama-sts")
    name = sts_world.revision_names(rehearsal)[1]["metadata"]["name"]
    path = rehearsal.client().object_path("llm", "controllerrevisions", name)

    def distrust() -> None:
        rehearsal.client().request("PATCH", path, body={"metadata": {"annotations": {
            "colleague/verdict": "do-not-trust"}}}, content_type=MERGE_PATCH)

    got = prompted_run(rehearsal, CONFIRM, distrust, inventory=sts_world.inventory(tmp_path))
    assert "Press enter to execute" in got.stderr, got.stderr
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, sts_world.STS_HOST)
    failed = [line for line in lines if line.startswith(f"mark revision 1 ({name}) known-good: ")]
    assert failed[-1] == (f"mark revision 1 ({name}) known-good: rehearsal: controllerrevision llm/{name} changed "
                          "since it was read (HTTP 422); nothing was written — re-run to plan against the new state"), \
        lines
    now = notes(rehearsal.client().request("GET", path))
    assert now["colleague/verdict"] == "do-not-trust" and KNOWN_GOOD not in now


# ---- LeaderWorkerSet ----

def lws_inventory(tmp: Path) -> str:
    """the 32B distill at 32k over two L40S serves 1.44 requests at once: the policy's peak is 1."""
    policy = tmp / "policy.yaml"
    policy.write_text("peak_concurrency: 1\n")
    path = tmp / "inventory.py"
    path.write_text(f'hosts = [("{lws_world.HOST}", {{"policy": "{policy}"}})]\n')
    return str(path)


def healthy_lws(rehearsal: Rehearsal) -> dict[str, Any]:
    cluster = rehearsal.clusters["rehearsal"]
    lws_world.install_crd(cluster)
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                   body=lws_world.vllm_lws(lws_world.NAME))
    assert wait_for_lws_rollout(client, "llm", lws_world.NAME, timeout=1800, clock=cluster.clock, interval=5).ok
    return lws_world.read(rehearsal)


def test_a_healthy_leaderworkerset_is_marked_once_and_restore_returns_to_it_first(rehearsal: Rehearsal,
                                                                                  tmp_path: Path) -> None:
    before = healthy_lws(rehearsal)
    stable(rehearsal, f"leaderworkerset.sigs.k8s.io/name={lws_world.NAME}")
    inv = lws_inventory(tmp_path)
    confirmed, lines = confirmed_twice(rehearsal, inv, lws_world.HOST, lws_revisions)
    assert any(line.startswith("ok: pod qwen-lws-0: maximum concurrency ") for line in lines), lines
    assert not any(line.startswith("ok: pod qwen-lws-0-1: maximum concurrency") for line in lines), lines  # no engine
    assert any(line.startswith("ok: worker pod qwen-lws-0-1: Ready for ") for line in lines), lines
    after = lws_world.read(rehearsal)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # never written

    # revision 2 serves too (never confirmed), revision 3 crash-loops: restore goes to the confirmed revision 1
    cluster = rehearsal.clusters["rehearsal"]
    lws_world.patch(rehearsal, [{"op": "add", "path": "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/env",
                                 "value": [{"name": "VLLM_TRY", "value": "2"}]}])
    assert wait_for_lws_rollout(rehearsal.client(), "llm", lws_world.NAME, timeout=1800, clock=cluster.clock,
                                interval=5).ok
    lws_world.patch(rehearsal, [{"op": "replace", "path": lws_world.ARGS, "value": lws_world.BAD_ARGS}])
    failed = wait_for_lws_rollout(rehearsal.client(), "llm", lws_world.NAME, timeout=1800, clock=cluster.clock,
                                  interval=5, fetch_log=False)
    assert failed.outcome == "crash-loop", failed.message
    got = rehearsal.pyinfra(inv, lws_world.RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    summary = (f"roll back leaderworkerset llm/qwen-lws from revision 3 to revision 1 "
               f"({confirmed['metadata']['name']}) — chosen by rule: known-good mark")
    assert any(line.startswith(summary) for line in host_lines(got.stderr, lws_world.HOST)), got.stderr
    assert lws_world.read(rehearsal)["spec"]["leaderWorkerTemplate"] == before["spec"]["leaderWorkerTemplate"]


def test_a_crash_looping_leaderworkerset_is_not_confirmed_and_nothing_is_marked(rehearsal: Rehearsal,
                                                                                tmp_path: Path) -> None:
    lws_world.start_set(rehearsal)
    before = lws_world.read(rehearsal)
    got = rehearsal.pyinfra(lws_inventory(tmp_path), CONFIRM, "-y", timeout=300)
    assert got.returncode != 0 and "Traceback" not in got.stderr
    lines = host_lines(got.stderr, lws_world.HOST)
    wait = "wait for leaderworkerset llm/qwen-lws to roll out: crash-loop after "
    assert any(line.startswith(wait) and line.endswith("startup log: max_len_exceeds_kv") for line in lines), lines
    assert marked(lws_revisions(rehearsal)) == []
    assert lws_world.read(rehearsal)["spec"] == before["spec"]


