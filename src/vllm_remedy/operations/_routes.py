"""Gateway API traffic shift: move part of an HTTPRoute's traffic to the policy's fallback backend.

Runbook step 1, "route part of the traffic to a fallback model or hosted API at the gateway". The route
is read directly through the host's client (the verb language covers the Deployment's own objects), and
written with the same guarded JSON patch and audit annotations as every other write.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from pyinfra.api import FunctionCommand

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, action_annotations
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.operations._context import K8sHost
from vllm_remedy.operations._show import show
from vllm_remedy.operations._write import observe, refuse, write_command
from vllm_remedy.policy import Fallback
from vllm_remedy.remedies.restore import SHED, shifted_route

GATEWAY = "gateway.networking.k8s.io/v1"


def route_path(fallback: Fallback) -> str:
    """The fallback HTTPRoute's Gateway API path (names URL-quoted), read and patched with the host's client
    because the verbs cover only the Deployment's own objects."""
    ref = fallback.route
    return f"/apis/{GATEWAY}/namespaces/{quote(ref.namespace, safe='')}/httproutes/{quote(ref.name, safe='')}"


def _weights(route: dict[str, Any]) -> list[str]:
    out = []
    for i, rule in enumerate((route.get("spec") or {}).get("rules") or []):
        parts = [f"{r.get('name')}={r.get('weight', 1)}" for r in rule.get("backendRefs") or []]
        out.append(f"rule {i}: " + ", ".join(parts))
    return out


def _route_ops(fallback: Fallback, keys: Keys, client: KubeClient, basis: dict[str, Any], at: float
               ) -> list[dict[str, Any]]:
    desired = shifted_route(basis, fallback)
    if desired == basis:
        return []
    notes = dict((desired.get("metadata") or {}).get("annotations") or {})
    notes.update(action_annotations(keys, SHED, f"shift {fallback.shift_percent}% of traffic to "
                                                f"{fallback.fallback.name}", at))
    desired = copy.deepcopy(desired)
    desired.setdefault("metadata", {})["annotations"] = notes
    return json_patch(basis, desired)


def shift_gateway(state: Any, host: Any, ctx: K8sHost, fallback: Fallback) -> Iterator[FunctionCommand]:
    """Yield the guarded write shifting traffic to the fallback backend; nothing when the weights already are."""
    path = route_path(fallback)
    try:
        route = ctx.client.request("GET", path)
        desired = shifted_route(route, fallback)
    except UserError as exc:
        yield from refuse(state, host, f"policy fallback.route: {exc}")
        return
    if desired == route:
        return
    observe(state, host, path, route)
    where = f"HTTPRoute {fallback.route.namespace}/{fallback.route.name}"
    summary = (f"shift {fallback.shift_percent}% of {where}'s traffic from {fallback.primary.name} to "
               f"{fallback.fallback.name}")
    show(state, host, [summary, *(f"  - {w}" for w in _weights(route)), *(f"  + {w}" for w in _weights(desired))],
         topic="route")
    yield write_command(path, functools.partial(_route_ops, fallback, ctx.keys), summary)
