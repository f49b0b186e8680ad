"""The observer's state after an action: the runner asks for fresh polls and gets them at once, not an interval later.

Each game day asks five times (after the world step, the fault, each deploy, before judging); waiting for the next
two polls at the 0.1 s cadence cost about a second of wall time per game. The cadence of the samples between those
asks must stay what it was: the picture and every cluster-time wait read it.
"""

from __future__ import annotations

import time
from pathlib import Path

from vllm_remedy.gameday.local import start_local
from vllm_remedy.gameday.observe import Observer
from vllm_remedy.gameday.scenario import find_scenario, load_scenario
from vllm_remedy.gameday.timeline import Timeline
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.policy import load_policy


def test_fresh_polls_run_now_and_the_cadence_stays(tmp_path: Path) -> None:
    sc = load_scenario(find_scenario("bad-rollout"))
    local = start_local(tmp_path, sc.seed, 300.0)
    obs = None
    try:
        client = KubeClient.for_context(local.context, str(local.kubeconfig))
        # an interval no test waits out: only a fresh ask can make these polls happen
        obs = Observer(client, sc, load_policy(sc.policy), Timeline(speed=300.0), interval=60.0)
        obs.start()
        assert obs.polls == 1  # the synchronous first poll
        started = time.monotonic()
        obs.wait_polls(2, timeout=30.0, fresh=True)
        assert obs.polls == 3 and time.monotonic() - started < 10.0
        assert obs.snapshot()[0]["rolled_out"] is True
        time.sleep(0.5)
        assert obs.polls == 3  # back to the cadence: no poll until the interval ends
    finally:
        if obs is not None:
            obs.stop()
        local.stop()
