"""Runbook step 1 — restore service (≤10 minutes).

    pyinfra inventories/prod.py deploys/restore.py          # shows the diff and the prediction, asks
    pyinfra inventories/prod.py deploys/restore.py --dry    # shows them and stops
    pyinfra inventories/prod.py deploys/restore.py -y       # applies (CronJobs and game days), showing the same

A crash-looping revision goes back to the last known-good one (the output says which rule chose it) and
the run waits until it is Ready, failing fast if that one crash-loops too. If nothing was deployed and
the pods die of OOM under load, load is shed instead: lower flags and, when the policy names a gateway
fallback, part of the traffic moved to it. A healthy Deployment is left alone.

The fallback is temporary: the last step shifts the traffic back once every pod of the primary has been
Ready for the policy's ``fallback.shift_back_after`` (default ``confirm.stable_for``). Until then it says
when; re-run this deploy then (step 6, deploys/confirm.py, refuses to confirm while the fallback serves).
"""

from vllm_remedy.operations import restore, workload

workload.revert_expired_toggles(name="Revert expired temporary toggles")
restore.known_good(name="Roll back a crash-looping revision to the last known-good one", wait=True)
restore.shed_load(name="Shed load when OOM under load and nothing was deployed", fallback=True)
# A rerun after the first run died mid-wait (kill -9, a lost terminal) resumes waiting for that rollout.
workload.rolled_out(name="Wait until the new pods are Ready")
restore.shift_back(name="Shift traffic back from the fallback once the primary is stable")
