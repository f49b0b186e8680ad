"""Runbook steps 2–3 — read the startup log and find what changed (read-only, never changes anything).

    pyinfra inventories/prod.py deploys/diagnose.py -y

Per host: the classified startup log of each crashed container with the runbook's grep lines as evidence,
the diff between the failing and the good revision (flags, image tag, model revision, nodeSelector/affinity,
resources, env), and the GPU each pod got with whatever else requests GPUs on that node.
"""

from vllm_remedy.operations import diagnose

diagnose.report(name="Read the startup log and what changed")
