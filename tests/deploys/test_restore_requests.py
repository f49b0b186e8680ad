"""deploys/restore.py's API requests per restore (issue 17): counted at the rehearsal server, never timed.

Before: every operation re-read the Deployment, its ReplicaSets and pods (pyinfra 3.10 keeps no fact cache) and
the rollout wait polled four GETs every 2 cluster seconds — 105-189 requests per restore, the wait's share
growing with the rollout. Now the plans read one snapshot per run (renewed after each write) and the wait
watches: ~40. The bound is generous (noise: retries, a watch resumed); a return to polling breaks it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import LOCAL, NS, RESTORE, incident, replicaset
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal

#: Requests one restore may make (measured: 40; before this change 105-189).
BOUND = 70


def test_a_restore_reads_one_snapshot_and_watches_the_rollout(rehearsal: Rehearsal) -> None:
    incident(rehearsal)
    good = replicaset(rehearsal, 14)
    seen: Counter[str] = Counter()
    original = rehearsal.server.dispatch

    def counting(req: Any) -> Any:
        watch = req.query.get("watch") in ("1", "true")
        seen["WATCH" if watch else req.method] += 1
        response = original(req)
        # a guarded write met a concurrent change (a controller's status update): redone. Kubernetes answers a JSON
        # patch whose resourceVersion ``test`` op fails with 422 (the sim too: sim/api/patch.py), another write 409
        if response.status == 409 or (req.method == "PATCH" and response.status == 422):
            seen["CONFLICT"] += 1
        return response

    rehearsal.server.dispatch = counting  # type: ignore[method-assign]
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    rehearsal.server.dispatch = original  # type: ignore[method-assign]
    assert got.returncode == 0, got.stderr
    assert "successfully rolled out" in got.stderr, got.stderr
    after = rehearsal.client().get_deployment(NS, "llama-8b")
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    # the crash record on revision 15's ReplicaSet, then the guarded rollback; a write refused for a concurrent
    # change is read again and redone (a loaded CI run saw 3 PATCHes once), never more than that
    assert seen["PATCH"] == 2 + seen["CONFLICT"], seen
    assert 1 <= seen["WATCH"] <= 6, seen  # Deployment, ReplicaSets, pods: watched, not polled
    assert sum(seen.values()) <= BOUND, seen
