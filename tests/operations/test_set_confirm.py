"""The pure parts of step 6 on a StatefulSet or LeaderWorkerSet (``operations.set_confirm``): when nothing is left to
wait for, and an LWS's workers as checks (they run no engine: Ready and stable is what is asked of them)."""

from __future__ import annotations

from typing import Any

from vllm_remedy.operations.set_confirm import rolled_out_now, worker_checks

NOW = 10_000.0


def pod(name: str, *, new: bool = True, ready: bool = True, since: float = 0.0, looping: bool = False,
        deleting: bool = False) -> dict[str, Any]:
    return {"name": name, "new": new, "ready": ready, "deleting": deleting, "revision": 2 if new else 1,
            "ready_since": "1970-01-01T00:00:00Z" if since == 0.0 else None,
            "containers": [{"name": "c", "crash_looping": looping, "state": "waiting" if looping else "running"}]}


def test_rolled_out_means_every_live_pod_new_and_ready() -> None:
    assert rolled_out_now({"pods": [pod("a"), pod("b", new=False, deleting=True)]})
    assert not rolled_out_now({"pods": [pod("a"), pod("b", new=False)]})
    assert not rolled_out_now({"pods": [pod("a"), pod("b", ready=False)]})
    assert not rolled_out_now({"pods": []})


def test_workers_are_checked_leaders_are_left_to_the_engine_checks() -> None:
    rows = {"pods": [pod("g-0"), pod("g-0-1"), pod("g-0-2", ready=False, looping=True), pod("h-0-1", new=False)]}
    checks = worker_checks(rows, {"g-0"}, NOW, 600.0)
    assert [ok for ok, _ in checks] == [True, False, False]
    assert checks[0][1] == "worker pod g-0-1: Ready for 2h46m40s of the required 10m"
    assert checks[1][1].endswith(", crash-looping, not Ready")
    assert checks[2][1] == "worker pod h-0-1: of an old revision (1)"
