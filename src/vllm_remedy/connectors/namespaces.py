"""Which workloads of a namespace run vLLM: what the ``@k8s/<cluster>/<namespace>`` host form expands to.

Why here and not at connect: pyinfra expands a host name into hosts while loading the inventory, so the
listing must answer before any host data exists; it reads every kind in :mod:`vllm_remedy.kube.kinds`
that the cluster serves, and warns about GPU workloads it cannot recognise rather than hiding them.
"""

from __future__ import annotations

from typing import Any

from pyinfra import logger

from vllm_remedy.errors import UserError
from vllm_remedy.gitops import OWNING_KINDS
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.inferenceservice import runtime_for
from vllm_remedy.kube.inferenceservice import template_of as isvc_template
from vllm_remedy.kube.kinds import DEPLOYMENT, INFERENCESERVICE, KINDS
from vllm_remedy.kube.workloads import list_workloads
from vllm_remedy.vllm.cmdline import NoServerError, find_server


def list_vllm_deployments(client: KubeClient, namespace: str, where: str = "") -> list[str]:
    """Names of the Deployments in ``namespace`` whose pod template runs vLLM (sorted)."""
    return [name for kind, name in list_vllm_workloads(client, namespace, where, kinds=(DEPLOYMENT.word,))]


def list_vllm_workloads(client: KubeClient, namespace: str, where: str = "",
                        kinds: tuple[str, ...] = tuple(KINDS)) -> list[tuple[str, str]]:
    """``(kind, name)`` of every workload in ``namespace`` whose pod templates run vLLM (by kind, then name).

    Kinds the cluster does not serve (no LWS or KServe CRD) are skipped. A template where vLLM is present
    but ambiguous (several servers, settings outside argv) counts: its host then fails at connect with
    find_server's reason instead of silently vanishing from the fleet. One that requests GPUs but runs
    nothing recognisable as vLLM is skipped with a warning naming it (``where``, the namespace host,
    prefixes it): a GPU workload missing from the fleet must not go unseen.
    """
    out = []
    for word in kinds:
        kind = KINDS[word]
        try:
            items = (client.list_deployments(namespace) if kind is DEPLOYMENT
                     else list_workloads(client, kind, namespace))
        except KubeError as exc:
            if kind is DEPLOYMENT or exc.status != 403:
                raise
            logger.warning(f"{where or namespace}: not listing {kind.resource}: forbidden (grant get/list on "
                           f"{kind.resource}.{kind.group.split('/')[0]} to see vLLM {kind.kind}s here)")
            continue
        names = []
        for item in items:
            name = item["metadata"]["name"]
            if _regenerated(item):  # KServe's / an LWS's child: its owner is the host (and is listed itself)
                continue
            verdict = _vllm_in(_isvc_specs(client, item) if kind is INFERENCESERVICE else kind.pod_specs_of(item))
            if verdict is None:
                continue
            if verdict:
                gpu = verdict[0]
                shown = f"{where or namespace}/{name}" if kind is DEPLOYMENT else \
                    f"{where or namespace}/{kind.word}/{name}"
                logger.warning(f"{where or namespace}: skipping {kind.kind} {name}: it requests GPUs (container "
                               f"{', '.join(gpu)}) but no vLLM server was recognised in its command/args; name it "
                               f"as {shown} to see why")
                continue
            names.append(name)
        out += [(word, n) for n in sorted(names)]
    return out


def _regenerated(obj: dict[str, Any]) -> bool:
    """Whether a controller owner regenerates the object (``gitops.OWNING_KINDS``): writes to it are refused."""
    return any(ref.get("controller") and ref.get("kind") in OWNING_KINDS
               for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])


def _isvc_specs(client: KubeClient, isvc: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod spec an InferenceService's predictor makes (its runtime's container plus ``model.args``); the predictor
    as written when no runtime supports it (its vLLM is then judged from ``containers`` alone)."""
    try:
        return [isvc_template(isvc, runtime_for(client, isvc))["spec"]]
    except UserError:
        return INFERENCESERVICE.pod_specs_of(isvc)


def _vllm_in(specs: list[dict[str, Any]]) -> list[list[str]] | None:
    """[] when a pod spec runs vLLM (or ambiguously so); [gpu containers] when none does but GPUs are asked;
    None when it is not a vLLM workload at all."""
    gpu: list[str] = []
    for spec in specs:
        try:
            find_server(spec)
        except NoServerError:
            gpu += _gpu_containers(spec)
            continue
        except UserError:
            pass
        return []
    return [gpu] if gpu else None


def _gpu_containers(spec: dict[str, Any]) -> list[str]:
    """Names of the containers that request or limit a GPU resource (any `*gpu*` extended resource)."""
    out = []
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if not isinstance(c, dict):
                continue
            res = c.get("resources") or {}
            wanted = {**(res.get("requests") or {}), **(res.get("limits") or {})}
            if any("gpu" in str(k).lower() and str(v) not in ("0", "") for k, v in wanted.items()):
                out.append(str(c.get("name", "?")))
    return out
