"""``vllm-remedy respond``: Alertmanager's webhook in, the runbook's deploys out, the incident on the record.

``webhook`` (payload parsing, pure) → ``routing`` (alert → inventory host and deploy, pure) → ``gate`` (mode,
cool-down, dedup, pure) → ``responder`` (worker threads running ``deploy``: the real pyinfra CLI) → ``record``
(Kubernetes Events, incident notes, chat); ``server`` is the HTTP side, ``inventory`` reads the inventory.
"""
