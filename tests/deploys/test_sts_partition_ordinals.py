"""deploys/restore.py on a StatefulSet numbered from ``spec.ordinals.start`` 1 under a RollingUpdate partition 1,
through the real pyinfra CLI on the rehearsal cluster: the controller counts the partition from the first ordinal
(pods llama-sts-1 and llama-sts-2; the bad rollout reaches only llama-sts-2), and so do the tools — the rollback's
"then:" line names llama-sts-2 as reached and llama-sts-1 as held, in --dry as in -y, and the rollback restores
llama-sts-2. Before, the tools counted the partition from 0 and named both pods as reached."""

from __future__ import annotations

import copy
from pathlib import Path

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal, crash_on_start, host_lines
from fixtures.sts_world import MAX_LEN_LOG, RESTORE, STS_HOST, crash_looping_on, inventory, roll, sts
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.sts_wait import wait_for_sts_rollout

rehearsal = pyinfra_run.rehearsal
THEN = ("then: updateStrategy RollingUpdate partition 1: the rollback replaces only pods with ordinal >= 2 "
        "(llama-sts-2); pods below it (llama-sts-1) keep the revision they run until the partition is lowered — as it "
        "held back the bad rollout, it holds back the rollback")


def _numbered_from_1(rehearsal: Rehearsal) -> dict:
    """llama-8b's healthy template as llama-sts, pods llama-sts-1 and llama-sts-2, partition 1, rolled out."""
    client = rehearsal.client()
    template = copy.deepcopy(client.get_deployment("llm", "llama-8b")["spec"]["template"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))  # its two L40S cards go to the set
    template["metadata"] = {"labels": {"app": "llama-sts"}}
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "llama-sts", "namespace": "llm"},
            "spec": {"replicas": 2, "ordinals": {"start": 1}, "serviceName": "llama-sts", "template": template,
                     "selector": {"matchLabels": {"app": "llama-sts"}},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}}}
    client.request("POST", client.object_path("llm", "statefulsets"), body=body)
    assert wait_for_sts_rollout(client, "llm", "llama-sts", timeout=3600, clock=rehearsal.cluster.clock,
                                interval=5).ok
    return sts(rehearsal)


def test_the_partition_counts_from_the_first_ordinal_in_dry_and_y(rehearsal: Rehearsal, tmp_path: Path) -> None:
    good = _numbered_from_1(rehearsal)["status"]["updateRevision"]
    roll(rehearsal, crash_on_start(MAX_LEN_LOG.read_text()))
    crash_looping_on(rehearsal, "llama-sts-2")
    inv = inventory(tmp_path)
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(inv, RESTORE, flag, timeout=300)
        assert got.returncode == 0, got.stderr
        assert THEN in host_lines(got.stderr, STS_HOST), (flag, got.stderr)
    pods = {p["metadata"]["name"]: p for p in rehearsal.client().list_pods("llm", "app=llama-sts")
            if not p["metadata"].get("deletionTimestamp")}
    assert sorted(pods) == ["llama-sts-1", "llama-sts-2"]
    assert all(p["metadata"]["labels"]["controller-revision-hash"] == good and pod_health(p).ready
               for p in pods.values()), pods
