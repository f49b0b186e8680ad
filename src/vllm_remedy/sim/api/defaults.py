"""Defaulting and the few validations kubectl users hit, applied to every API write.

The apiserver defaults pod templates on create *and* on every patch; the deployment controller and
``rollout undo`` compare templates, so a field defaulted on one path and not the other would make an
identical template look different (a spurious new revision). Hence the controllers' own defaulting
functions, called here on every write path.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from vllm_remedy.sim.api import config_validation, containers, names
from vllm_remedy.sim.api.validation import check_types
from vllm_remedy.sim.controllers.defaults import default_deployment, default_pod, default_replicaset
from vllm_remedy.sim.controllers.leaderworkerset import default_leaderworkerset
from vllm_remedy.sim.controllers.statefulset import default_statefulset
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]


def _check_workload(obj: Obj, kind: str, resource_key: str) -> None:
    spec = obj.get("spec") or {}
    name = obj.get("metadata", {}).get("name", "")
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    causes = [(e.field, e.body()) for e in names.errors(resource_key, obj)]  # ValidateObjectMeta first
    if not selector and not (spec.get("selector") or {}).get("matchExpressions"):
        causes.append(("spec.selector", "Required value"))
    elif any(labels.get(k) != v for k, v in selector.items()):
        causes.append(("spec.template.metadata.labels",
                       f"Invalid value: {labels}: `selector` does not match template `labels`"))
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    if not pod_spec.get("containers"):
        causes.append(("spec.template.spec.containers", "Required value"))
    causes += [(e.field, e.body()) for e in containers.errors(pod_spec, "spec.template.spec")]
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 0:
        causes.append(("spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0"))
    if causes:
        text = ", ".join(f"{f}: {m}" for f, m in causes)
        raise ApiError(422, "Invalid", f'{kind}.apps "{name}" is invalid: {text}',
                       {"name": name, "group": "apps", "kind": kind,
                        "causes": [{"reason": _reason(m), "message": m, "field": f} for f, m in causes]})


def _reason(body: str) -> str:
    """The cause's ``reason`` (``field.ErrorType``) from its body's first words."""
    return {"Required value": "FieldValueRequired", "Duplicate value": "FieldValueDuplicate"}.get(
        body.split(":", 1)[0], "FieldValueInvalid")


def _cluster_ip(namespace: str, name: str) -> str:
    """A stable address in 10.96.0.0/12 (the kubeadm default range): re-creating a Service keeps it."""
    n = int.from_bytes(hashlib.sha256(f"{namespace}/{name}".encode()).digest()[:4], "big") % ((1 << 20) - 2) + 1
    return f"10.{96 + (n >> 16)}.{(n >> 8) & 0xFF}.{n & 0xFF}"


def _default_service(obj: Obj) -> None:
    """What the apiserver fills in on a Service: type, cluster IP, ports' protocol and targetPort."""
    spec = obj.setdefault("spec", {})
    kind = spec.setdefault("type", "ClusterIP")
    if kind != "ExternalName":
        meta = obj.get("metadata", {})
        if spec.get("clusterIP") != "None":
            spec["clusterIP"] = spec.get("clusterIP") or _cluster_ip(meta.get("namespace", ""), meta.get("name", ""))
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    spec.setdefault("sessionAffinity", "None")
    for i, port in enumerate(spec.get("ports") or []):
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
        if kind in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
            port["nodePort"] = 30000 + (int(_cluster_ip("", obj["metadata"].get("name", "")).split(".")[-1]) * 7
                                        + i) % 2768
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    obj.setdefault("status", {}).setdefault("loadBalancer", {})


#: What an update may change in a StatefulSet's spec (the apiserver's ValidateStatefulSetUpdate); the rest is fixed.
STS_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
               "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


def check_statefulset_update(old: Obj, new: Obj) -> None:
    """422 as the apiserver answers an update touching any other spec field (serviceName, podManagementPolicy,
    selector, volumeClaimTemplates): tools must not get away here with an edit a real cluster refuses."""
    before, after = dict(old.get("spec") or {}), dict(new.get("spec") or {})
    if {k: v for k, v in before.items() if k not in STS_MUTABLE} == {k: v for k, v in after.items()
                                                                     if k not in STS_MUTABLE}:
        return
    name = new.get("metadata", {}).get("name", "")
    allowed = ", ".join(f"'{f}'" for f in STS_MUTABLE[:-1]) + f" and '{STS_MUTABLE[-1]}'"
    message = f"updates to statefulset spec for fields other than {allowed} are forbidden"
    raise ApiError(422, "Invalid", f'StatefulSet.apps "{name}" is invalid: spec: Forbidden: {message}',
                   {"name": name, "group": "apps", "kind": "StatefulSet",
                    "causes": [{"reason": "FieldValueForbidden", "message": f"Forbidden: {message}", "field": "spec"}]})


def _default_secret(obj: Obj) -> None:
    """What the apiserver's v1 conversion does to a Secret: ``data`` must be base64 (Go's ``[]byte`` JSON), the
    write-only ``stringData`` is encoded into ``data`` (its keys winning) and dropped; ``type`` defaults to Opaque."""
    for key, value in (obj.get("data") or {}).items():
        try:
            base64.b64decode(str(value), validate=True)
        except binascii.Error as err:
            raise ApiError(400, "BadRequest", f'Secret in version "v1" cannot be handled as a Secret: '
                           f"illegal base64 data in data.{key}: {err}") from err
    strings = obj.pop("stringData", None) or {}
    if strings:
        data = obj["data"] = dict(obj.get("data") or {})
        data.update({str(k): base64.b64encode(str(v).encode()).decode() for k, v in strings.items()})
    obj.setdefault("type", "Opaque")


def default_and_validate(resource_key: str, obj: Obj, old: Obj | None = None) -> None:
    """Default ``obj`` in place for its resource; 400 for wrong JSON types, 422 Invalid as the apiserver (``old``: the
    stored object on an update, for the rules on what an update may change)."""
    check_types(resource_key, obj)
    if resource_key == "deployments.apps":
        default_deployment(obj)
        _check_workload(obj, "Deployment", resource_key)
    elif resource_key == "replicasets.apps":
        default_replicaset(obj)
        _check_workload(obj, "ReplicaSet", resource_key)
    elif resource_key == "statefulsets.apps":
        default_statefulset(obj)
        _check_workload(obj, "StatefulSet", resource_key)
    elif resource_key == "leaderworkersets.leaderworkerset.x-k8s.io":
        default_leaderworkerset(obj)
    elif resource_key == "pods" and isinstance(obj.get("spec"), dict):
        default_pod(obj)
        obj.setdefault("status", {}).setdefault("phase", "Pending")
        if errs := names.errors(resource_key, obj) + containers.errors(obj["spec"], "spec"):
            raise config_validation.invalid("Pod", str(obj["metadata"].get("name") or ""), errs)
    elif resource_key == "services":
        _default_service(obj)
    elif resource_key == "secrets":
        _default_secret(obj)
        config_validation.check(resource_key, obj, old, names.errors(resource_key, obj))
    elif resource_key == "configmaps":
        config_validation.check(resource_key, obj, old, names.errors(resource_key, obj))
    elif resource_key == "namespaces":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")
