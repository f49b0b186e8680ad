"""Scheduled drift checks and toggle expiry (runbook: "prevent it next time", made automatic).

``checks`` judges one Deployment against its policy (pure); ``runner`` runs the checks and the deploys'
own operations in plan mode (or ``revert_expired_toggles`` for real) through pyinfra's Python API, in a
child process whose first act is gevent's ``patch_all`` (``python -m vllm_remedy.drift``); ``report``
turns the per-host results into the versioned ``DriftReport`` and the human view.

Nothing is imported here: importing the package must not pull in urllib3 before the child patches gevent.
"""
