"""Runbook steps 2–3 — read the startup log and find what changed.

    pyinfra inventories/prod.py deploys/diagnose.py -y

Per host: the classified startup log of each crashed container with the runbook's grep lines as evidence,
the diff between the failing and the good revision (flags, image tag, model revision, nodeSelector/affinity,
resources, env), and the GPU each pod got with whatever else requests GPUs on that node. The workload is
never changed; what was seen dying is recorded on its revision (Events expire after an hour, and ``restore``
must never roll back onto it), withdrawing a known-good mark there: a Deployment's ReplicaSet, a StatefulSet's
or LeaderWorkerSet's ControllerRevision (for an LWS, the logs of leader and worker pods of each group).
"""

from pyinfra import host

from vllm_remedy.operations import diagnose, evidence, inferenceservice, kinds, lws_evidence, sts_evidence

if host.data.get("k8s_kind") == "inferenceservice":  # read from its own spec; KServe owns the ReplicaSets
    inferenceservice.report(name="Read the startup log and what changed since the last ready predictor")
elif kinds.handles("statefulset"):
    sts_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    diagnose.report(name="Read the startup log and what changed")
elif kinds.handles("leaderworkerset"):
    lws_evidence.crash_recorded(name="Record crash-looping revisions on their ControllerRevisions")
    diagnose.report(name="Read the startup log and what changed")
elif not kinds.handles("deployment"):  # a namespace host expands to every kind: refuse the others in one line
    kinds.unsupported(name="Read the startup log and what changed", what="the diagnosis")
else:
    evidence.crash_recorded(name="Record crash-looping revisions on their ReplicaSets")
    diagnose.report(name="Read the startup log and what changed")
