"""Runbook step 1 — restore service (≤10 minutes).

    pyinfra inventories/prod.py deploys/restore.py          # shows the diff and the prediction, asks
    pyinfra inventories/prod.py deploys/restore.py --dry    # shows them and stops
    pyinfra inventories/prod.py deploys/restore.py -y       # applies (CronJobs and game days)

A crash-looping revision goes back to the last known-good one (the output says which rule chose it) and
the run waits until it is Ready, failing fast if that one crash-loops too. If nothing was deployed and
the pods die of OOM under load, load is shed instead. A healthy Deployment is left alone.
"""

from vllm_remedy.operations import restore, workload

workload.revert_expired_toggles(name="Revert expired temporary toggles")
restore.known_good(name="Roll back a crash-looping revision to the last known-good one", wait=True)
restore.shed_load(name="Shed load when OOM under load and nothing was deployed", fallback=True)
# A rerun after the first run died mid-wait (kill -9, a lost terminal) resumes waiting for that rollout.
workload.rolled_out(name="Wait until the new pods are Ready")
