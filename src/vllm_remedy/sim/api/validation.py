"""Type checks the apiserver's decoder makes before anything is stored.

kube-apiserver decodes into Go structs, so ``labels: 5`` or ``containers: {}`` never reaches etcd:
it is a 400 naming the field. The controllers, selectors and table printers here read these fields
with dict/list operations, so the same checks keep a malformed write from poisoning the store (and
every later request) with a type they cannot read.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
# A schema is a type name, a dict {field: schema} (an object; unknown fields pass, as they are pruned or
# ignored by kube), ["list", item schema], or ["map", value schema].
STR, INT, BOOL, ANY = "string", "integer", "boolean", "any"
STR_MAP: Any = ["map", STR]
META: Obj = {"name": STR, "generateName": STR, "namespace": STR, "resourceVersion": STR, "uid": STR,
             "labels": STR_MAP, "annotations": STR_MAP, "finalizers": ["list", STR],
             "ownerReferences": ["list", {"apiVersion": STR, "kind": STR, "name": STR, "uid": STR,
                                          "controller": BOOL}],
             "managedFields": ["list", {"manager": STR, "operation": STR, "fieldsV1": ["map", ANY]}]}
CONTAINER: Obj = {"name": STR, "image": STR, "command": ["list", STR], "args": ["list", STR],
                  "env": ["list", {"name": STR, "value": STR}], "envFrom": ["list", ANY],
                  "ports": ["list", {"containerPort": INT, "name": STR, "protocol": STR}],
                  "resources": {"limits": ["map", ANY], "requests": ["map", ANY]},
                  "volumeMounts": ["list", {"name": STR, "mountPath": STR}],
                  "readinessProbe": ["map", ANY], "livenessProbe": ["map", ANY], "startupProbe": ["map", ANY]}
POD_SPEC: Obj = {"containers": ["list", CONTAINER], "initContainers": ["list", CONTAINER],
                 "nodeSelector": STR_MAP, "nodeName": STR, "tolerations": ["list", ["map", ANY]],
                 "affinity": ["map", ANY], "volumes": ["list", {"name": STR}], "restartPolicy": STR,
                 "readinessGates": ["list", {"conditionType": STR}], "schedulerName": STR}
SELECTOR: Obj = {"matchLabels": STR_MAP, "matchExpressions": ["list", {"key": STR, "operator": STR,
                                                                       "values": ["list", STR]}]}
TEMPLATE: Obj = {"metadata": META, "spec": POD_SPEC}
WORKLOAD: Obj = {"replicas": INT, "selector": SELECTOR, "template": TEMPLATE, "minReadySeconds": INT,
                 "revisionHistoryLimit": INT, "progressDeadlineSeconds": INT, "paused": BOOL,
                 "strategy": {"type": STR, "rollingUpdate": ["map", ANY]}}
SCHEMAS: dict[str, Obj] = {
    "deployments.apps": {"spec": WORKLOAD, "status": ["map", ANY]},
    "replicasets.apps": {"spec": WORKLOAD, "status": ["map", ANY]},
    "pods": {"spec": POD_SPEC, "status": {"phase": STR, "podIP": STR, "conditions": ["list", ["map", ANY]],
                                          "containerStatuses": ["list", ["map", ANY]]}},
    "nodes": {"spec": {"unschedulable": BOOL, "taints": ["list", ["map", ANY]]},
              "status": {"capacity": ["map", ANY], "allocatable": ["map", ANY],
                         "conditions": ["list", ["map", ANY]], "addresses": ["list", {"type": STR, "address": STR}],
                         "nodeInfo": STR_MAP}},
    "configmaps": {"data": STR_MAP, "binaryData": STR_MAP, "immutable": BOOL},
    "secrets": {"data": STR_MAP, "stringData": STR_MAP, "type": STR, "immutable": BOOL},
    "services": {"spec": {"type": STR, "selector": STR_MAP, "clusterIP": STR, "clusterIPs": ["list", STR],
                          "ports": ["list", {"name": STR, "port": INT, "protocol": STR, "nodePort": INT}]},
                 "status": ["map", ANY]},
    "events": {"involvedObject": ["map", ANY], "reason": STR, "message": STR,
               "type": STR, "count": INT, "source": STR_MAP},
    "namespaces": {"spec": {"finalizers": ["list", STR]}, "status": {"phase": STR}},
    "httproutes.gateway.networking.k8s.io": {"spec": {"hostnames": ["list", STR],
                                                      "parentRefs": ["list", ["map", ANY]],
                                                      "rules": ["list", ["map", ANY]]}},
}
_PY = {STR: (str,), INT: (int,), BOOL: (bool,)}
_GO = {str: "string", int: "number", float: "number", bool: "bool", list: "array", dict: "object"}


def _fail(path: str, value: Any, want: str) -> ApiError:
    got = "null" if value is None else _GO.get(type(value), type(value).__name__)
    return ApiError(400, "BadRequest", f"json: cannot unmarshal {got} into Go struct field {path} of type {want}")


def _check(value: Any, schema: Any, path: str) -> None:
    if value is None or schema == ANY:
        return  # null means "unset" to the decoder
    if isinstance(schema, str):
        ok = isinstance(value, _PY[schema]) and not (schema == INT and isinstance(value, bool))
        if schema == INT and isinstance(value, float) and value.is_integer():
            ok = True
        if not ok:
            raise _fail(path, value, schema)
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            raise _fail(path, value, "object")
        for key, sub in schema.items():
            if key in value:
                _check(value[key], sub, f"{path}.{key}" if path else key)
    elif schema[0] == "list":
        if not isinstance(value, list):
            raise _fail(path, value, "array")
        for i, item in enumerate(value):
            if item is None and schema[1] != ANY:
                raise _fail(f"{path}[{i}]", item, schema[1] if isinstance(schema[1], str) else "object")
            _check(item, schema[1], f"{path}[{i}]")
    else:  # map
        if not isinstance(value, dict):
            raise _fail(path, value, f"map[string]{schema[1]}")
        for key, item in value.items():
            _check(item, schema[1], f"{path}.{key}")


def drop_nulls(value: Any) -> Any:
    """``null`` decodes to Go's zero value, i.e. "unset": remove such keys (in place) before defaulting."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for item in value.values():
            drop_nulls(item)
    elif isinstance(value, list):
        for item in value:
            drop_nulls(item)
    return value


def check_types(resource_key: str, obj: Obj) -> None:
    """Raise 400 BadRequest when a field has a JSON type the real decoder would refuse."""
    drop_nulls(obj)
    _check(obj.get("metadata"), META, "metadata")
    _check(obj, SCHEMAS.get(resource_key, {}), "")


ROOT_MESSAGES = {"deployments.apps": "Deployment", "replicasets.apps": "ReplicaSet", "pods": "Pod",
                 "configmaps": "ConfigMap", "secrets": "Secret", "namespaces": "Namespace"}
OPAQUE = frozenset({"Quantity", "Time", "MicroTime", "IntOrString"})


def unknown_fields(resource_key: str, obj: Obj) -> list[str]:
    """Paths of fields the API type does not have (``spec.template.spec.containers[0].imagee``).

    Uses the protobuf field tables, whose names are the JSON names; messages left out of them
    (statuses, cloud volume sources) are not inspected.
    """
    from vllm_remedy.sim.api.protobuf import json_fields, schema

    root = ROOT_MESSAGES.get(resource_key)
    if root is None:
        return []
    tables = schema()

    def walk(value: Any, message: str, path: str) -> list[str]:
        if message not in tables or not isinstance(value, dict):
            return []
        fields = json_fields(message)
        found: list[str] = []
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if not path and key in ("apiVersion", "kind"):
                continue
            field = fields.get(key)
            if field is None:
                found.append(where)
                continue
            _, sub, repeated, is_map = field
            if len(sub) == 1 or sub in OPAQUE:
                continue
            if is_map and isinstance(item, dict):
                for k, v in item.items():
                    found += walk(v, sub, f"{where}.{k}")
            elif repeated and isinstance(item, list):
                for i, v in enumerate(item):
                    found += walk(v, sub, f"{where}[{i}]")
            else:
                found += walk(item, sub, where)
        return found

    return walk(obj, root, "")


def field_validation(resource_key: str, kind: str, obj: Obj, mode: str | None) -> dict[str, str]:
    """Apply ``fieldValidation``: Strict → 400 on unknown fields; Warn (the default) → Warning headers."""
    mode = mode or "Warn"
    if mode not in ("Ignore", "Warn", "Strict"):
        raise ApiError(400, "BadRequest", f'fieldValidation: Unsupported value: "{mode}": supported values: '
                                          '"Ignore", "Strict", "Warn"')
    if mode == "Ignore":
        return {}
    unknown = unknown_fields(resource_key, obj)
    if not unknown:
        return {}
    if mode == "Strict":
        listed = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise ApiError(400, "BadRequest", f'{kind} in version "v1" cannot be handled as a {kind}: '
                                          f"strict decoding error: {listed}")
    return {"Warning": ", ".join(f'299 - "unknown field \\"{u}\\""' for u in unknown)}
