#!/usr/bin/env python3
"""Benchmark game day "alert to restored": time to restore with `vllm-remedy respond` against the manual path.

Each trial: a fresh rehearsal cluster (runbook seed, speed 600), the paging chain of tests/fixtures/alert_path.py
(Debian's Prometheus evaluating the rendered PrometheusRule over the cluster's kube-state-metrics series every
0.5 s, ``for: 2s``; Debian's Alertmanager with the shipped receiver; the responder in mode auto), then the bad
revision of tests/fixtures/restore_world.py (every pod crash-loops with vLLM's KV-cache error).

Measured per trial, in real (wall) seconds unless marked cluster:

- fault → alert: the fault's write to the earliest startsAt (Prometheus' FiredAt) seen at Alertmanager;
- alert → first write: to the first write to the Deployment after the fault (polled in-process every 20 ms):
  Alertmanager's dispatch, the webhook, routing, and the restore deploy reading and deciding; of which
  alert → responder run is up to the responder's "run:" log line (Alertmanager, webhook, routing, gate);
- alert → Ready: to the Deployment Ready on the known-good template; first write → Ready also in cluster seconds
  (the rollout, which a real cluster does in its own time — the rehearsal cluster runs 600× faster);
- the responder's own figure (incident note timeToRestoreSeconds: startsAt → deploy finished).

The manual path is the policy's ``respond.human_response`` (default 10m: page → acked → at a keyboard) plus the
same deploy's decide time and the same rollout; so "with responder" on a real cluster is alert → first write
(real) + rollout (cluster seconds), and "manual" is human_response + the same. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.alert_path import FOR, INTERVAL, Watch, alert_path, note  # noqa: E402
from fixtures.pyinfra_run import start_rehearsal  # noqa: E402
from fixtures.restore_world import bad_revision, replicaset, vllm_runtime, wait_until  # noqa: E402
from vllm_remedy.policy import Policy  # noqa: E402
from vllm_remedy.policy.loader import load_policy  # noqa: E402


def trial(tmp: Path) -> dict[str, Any]:
    rehearsal = start_rehearsal(tmp)
    try:
        good = replicaset(rehearsal, 14)
        with alert_path(rehearsal) as path:
            vllm_runtime(rehearsal)
            bad = rehearsal.change(bad_revision, change_cause="drop --max-model-len; move to the L4 pool")
            watch = Watch(rehearsal, good, alertmanager=path.alertmanager, responder_log=path.responder.log)
            watch.arm(int(bad["metadata"]["generation"]))
            try:
                path.responder.wait_log(r"deploys/restore.py remediated", timeout=300)
                wait_until(lambda: watch.ready is not None, timeout=120, what="Ready on the restored template")
            finally:
                watch.stop.set()
            doc = note(path)
            policy: Policy = load_policy(path.policy)
    finally:
        rehearsal.stop()
    alerted = watch.alerted
    assert alerted is not None and watch.first_write is not None and watch.ready is not None
    return {
        "alert": doc["alert"]["name"],
        "alerts_seen": sorted(watch.alerts),
        "fault_to_alert_s": round(alerted - watch.armed, 2),
        "alert_to_first_write_s": round(watch.first_write - alerted, 2),
        "alert_to_responder_run_s": None if watch.dispatched is None else round(watch.dispatched - alerted, 2),
        "alert_to_ready_s": round(watch.ready - alerted, 2),
        "first_write_to_ready_cluster_s": round(watch.ready_cluster - watch.first_write_cluster, 1),
        "responder_time_to_restore_s": doc["timeToRestoreSeconds"],
        "human_response_s": policy.respond.human_response.total_seconds(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    trials = []
    load_before = os.getloadavg()
    for i in range(args.trials):
        with tempfile.TemporaryDirectory(prefix=f"bench-respond-{i}-") as tmp:
            trials.append(trial(Path(tmp)))
            print(json.dumps(trials[-1]), file=sys.stderr)

    def median(key: str) -> float:
        return statistics.median(t[key] for t in trials)

    human = median("human_response_s")
    decide = median("alert_to_first_write_s")
    rollout = median("first_write_to_ready_cluster_s")
    out = {
        "machine": {"python": platform.python_version(), "arch": platform.machine(), "when": time.strftime("%F"),
                    "loadavg_1m_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)]},
        "setup": {"scrape_and_eval_interval": INTERVAL, "alerts_for": FOR, "cluster_speed": 600},
        "trials": trials,
        "median": {k: median(k) for k in ("fault_to_alert_s", "alert_to_responder_run_s", "alert_to_first_write_s",
                                          "alert_to_ready_s", "first_write_to_ready_cluster_s")},
        # On a real cluster the rollout takes its cluster seconds in real time; both paths share it.
        "time_to_restore_from_alert_s": {"responder": round(decide + rollout, 1),
                                         "manual": round(human + decide + rollout, 1),
                                         "ratio_manual_over_responder": round((human + decide + rollout)
                                                                              / (decide + rollout), 2)},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
