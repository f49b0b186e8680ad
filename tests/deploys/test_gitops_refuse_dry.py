"""`--dry` under policy gitops: refuse shows what `-y` does: the refusal once, no change counted for the refused
rollback, and the same non-zero exit - on a Helm-managed StatefulSet and Deployment, through the real pyinfra CLI."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal, crash_on_start, detected_changes, host_lines
from fixtures.restore_world import HOST as DEP_HOST
from fixtures.restore_world import incident
from vllm_remedy.kube.client import JSON_PATCH
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.kube.sts_wait import wait_for_sts_rollout

rehearsal = pyinfra_run.rehearsal
STS_HOST = "@k8s/rehearsal/llm/statefulset/llama-sts"
RESTORE = str(ROOT / "deploys" / "restore.py")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
HELM = {"labels": {"app.kubernetes.io/managed-by": "Helm"}, "annotations": {"meta.helm.sh/release-name": "vllm"}}


def helm_set(rehearsal: Rehearsal) -> dict[str, Any]:
    """llama-8b's template as a Helm-rendered 2-replica StatefulSet, rolled out, then a bad rollout crash-looping."""
    client = rehearsal.client()
    template = copy.deepcopy(client.get_deployment("llm", "llama-8b")["spec"]["template"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))
    template["metadata"] = {"labels": {"app": "llama-sts"}}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet",
           "metadata": {"name": "llama-sts", "namespace": "llm", **copy.deepcopy(HELM)},
           "spec": {"replicas": 2, "serviceName": "llama-sts", "selector": {"matchLabels": {"app": "llama-sts"}},
                    "template": template}}
    path = client.object_path("llm", "statefulsets", "llama-sts")
    client.request("POST", client.object_path("llm", "statefulsets"), body=sts)
    clock = rehearsal.clusters["rehearsal"].clock
    assert wait_for_sts_rollout(client, "llm", "llama-sts", timeout=900, clock=clock, interval=5).ok
    current = client.request("GET", path)
    bad = copy.deepcopy(current)
    bad["spec"]["template"]["metadata"]["annotations"] = crash_on_start(OOM)
    client.request("PATCH", path, body=json_patch(current, bad), content_type=JSON_PATCH)
    failed = wait_for_sts_rollout(client, "llm", "llama-sts", timeout=900, clock=clock, interval=5, fetch_log=False)
    assert failed.outcome == "crash-loop", failed.message
    return client.request("GET", path)


def inventory(tmp: Path, host: str) -> str:
    policy = tmp / "policy.yaml"
    policy.write_text("gitops: refuse\n")
    path = tmp / "inventory.py"
    path.write_text(f'hosts = [("{host}", {{"policy": "{policy}"}})]\n')
    return str(path)


def refusal_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("refused: ") and "policy gitops is refuse" in line]


def test_the_dry_run_of_a_refused_statefulset_rollback_fails_as_the_real_run_does(rehearsal: Rehearsal,
                                                                                 tmp_path: Path) -> None:
    before = helm_set(rehearsal)
    inv = inventory(tmp_path, STS_HOST)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", timeout=300)
    lines = host_lines(dry.stderr, STS_HOST)
    assert len(refusal_lines(lines)) == 1, lines
    assert refusal_lines(lines)[0].endswith("make the change in the release's values"), lines
    after_refusal = lines[lines.index(refusal_lines(lines)[0]) + 1]
    assert after_refusal.startswith("helm: the manifest's spec.template.metadata.annotations: "), lines
    assert after_refusal.endswith("the chart's value that renders it is not known here: find it in the chart's "
                                  "values by hand"), lines
    rollback = [cells for name, cells in detected_changes(dry.stderr).items() if name.startswith("Roll ")]
    assert rollback and all(cells[0] == "-" for cells in rollback), detected_changes(dry.stderr)
    assert dry.returncode == 1, dry.stderr

    real = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert real.returncode == 1, real.stderr
    assert len(refusal_lines(host_lines(real.stderr, STS_HOST))) == 1, real.stderr
    after = rehearsal.client().request("GET", rehearsal.client().object_path("llm", "statefulsets", "llama-sts"))
    assert after["metadata"]["generation"] == before["metadata"]["generation"]


def test_the_dry_run_of_a_refused_deployment_rollback_fails_as_the_real_run_does(rehearsal: Rehearsal,
                                                                                 tmp_path: Path) -> None:
    incident(rehearsal)

    def helm(dep: dict[str, Any]) -> None:
        for key, values in HELM.items():
            dep["metadata"].setdefault(key, {}).update(values)
    before = rehearsal.change(helm)
    inv = inventory(tmp_path, DEP_HOST)
    dry = rehearsal.pyinfra(inv, RESTORE, "--dry", timeout=300)
    lines = host_lines(dry.stderr, DEP_HOST)
    assert len(refusal_lines(lines)) == 1, lines
    rollback = [cells for name, cells in detected_changes(dry.stderr).items() if name.startswith("Roll")]
    assert rollback and all(cells[0] == "-" for cells in rollback), detected_changes(dry.stderr)
    assert dry.returncode == 1, dry.stderr

    real = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert real.returncode == 1, real.stderr
    assert len(refusal_lines(host_lines(real.stderr, DEP_HOST))) == 1, real.stderr
    assert rehearsal.client().get_deployment("llm", "llama-8b")["metadata"]["generation"] == \
        before["metadata"]["generation"]
