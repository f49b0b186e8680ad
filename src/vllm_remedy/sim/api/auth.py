"""Optional bearer-token authentication with namespaced, RBAC-shaped roles.

Enough to prove the product's read-only drift-check role works: a token whose rules allow
get/list/watch succeeds on reads and gets kube's 403 Forbidden text on patch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.sim.api import rbac
from vllm_remedy.sim.store import ApiError, Store

Obj = dict[str, Any]


@dataclass(frozen=True)
class Rule:
    """``verbs`` on ``resources`` (RBAC names: ``deployments.apps``, ``pods/log``; ``*`` = any) in
    ``namespaces`` (empty = every namespace and cluster-scoped objects) of ``clusters`` (empty = all)."""

    verbs: frozenset[str]
    resources: frozenset[str]
    namespaces: frozenset[str] = frozenset()
    clusters: frozenset[str] = frozenset()

    def allows(self, cluster: str, verb: str, resource: str, namespace: str | None) -> bool:
        """``resource`` is ``plural[/sub][.group]``; a rule may name it with or without the group."""
        plural_sub, _, _group = resource.partition(".")
        return ((not self.clusters or cluster in self.clusters)
                and ("*" in self.verbs or verb in self.verbs)
                and ("*" in self.resources or resource in self.resources or plural_sub in self.resources)
                and (not self.namespaces or (namespace is not None and namespace in self.namespaces)))


@dataclass(frozen=True)
class Identity:
    """Who a bearer token stands for and the RBAC-like rules limiting what it may do."""

    user: str
    rules: tuple[Rule, ...]


@dataclass
class Authorizer:
    """Token → identity. With no tokens configured, auth is off and everyone may do everything."""

    tokens: dict[str, Identity] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        """Auth is on only when tokens are configured, so the default sim needs no credentials."""
        return bool(self.tokens)

    def authenticate(self, header: str | None) -> Identity | None:
        """The caller's identity, None with auth off; a missing or unknown token is a 401 as on a real API."""
        if not self.enabled:
            return None
        scheme, _, token = (header or "").partition(" ")
        identity = self.tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if identity is None:
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return identity

    def authorize(self, identity: Identity | None, cluster: str, verb: str, resource: str,
                  namespace: str | None, name: str | None, store: Store | None = None) -> None:
        """Raise kube's 403 unless the token's own rules or the cluster's RBAC objects (``store``) allow
        ``verb`` on ``resource`` (``plural[/sub][.group]``, e.g. ``pods/log``)."""
        if identity is None or any(r.allows(cluster, verb, resource, namespace) for r in identity.rules):
            return
        plural, _, group = resource.partition(".")
        if store is not None and rbac.allows(store, identity.user, verb, group, plural, namespace, name):
            return
        group_resource = plural.partition("/")[0] + (f".{group}" if group else "")
        what = f'{group_resource} "{name}" is forbidden' if name else f"{group_resource} is forbidden"
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        message = (f'{what}: User "{identity.user}" cannot {verb} resource "{plural}" in API group "{group}"'
                   f"{where}")
        raise ApiError(403, "Forbidden", message,
                       {"name": name or "", "kind": plural.partition("/")[0], **({"group": group} if group else {})})


def _strings(value: Any, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset([value])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{where}: expected a string or a list of strings")
    return frozenset(value)


def load(config: Obj | None, source: str = "auth") -> Authorizer:
    """``{tokens: {TOKEN: {user: NAME, rules: [{verbs, resources, namespaces?, clusters?}]}}}``.

    ``rules`` may be omitted: the user then has what the cluster's RBAC objects bind to it (a
    ServiceAccount user is ``system:serviceaccount:<namespace>:<name>``).
    """
    if not config:
        return Authorizer()
    tokens = config.get("tokens")
    if not isinstance(tokens, dict):
        raise UserError(f"{source}: tokens: expected a mapping of token to {{user, rules}}")
    out: dict[str, Identity] = {}
    for token, spec in tokens.items():
        where = f"{source}: tokens.{token}"
        if not isinstance(spec, dict) or not isinstance(spec.get("rules", []), list):
            raise UserError(f"{where}: expected {{user: NAME, rules: [...]}}")
        rules = []
        for i, rule in enumerate(spec.get("rules") or []):
            if not isinstance(rule, dict) or "verbs" not in rule or "resources" not in rule:
                raise UserError(f"{where}.rules[{i}]: expected verbs and resources")
            unknown = sorted(set(rule) - {"verbs", "resources", "namespaces", "clusters"})
            if unknown:  # an RBAC-style apiGroups: ignored would widen the rule to every group
                raise UserError(f"{where}.rules[{i}]: unknown key {unknown[0]!r} (expected verbs, resources, "
                                "namespaces, clusters; name a group in the resource, e.g. deployments.apps)")
            rules.append(Rule(_strings(rule["verbs"], f"{where}.rules[{i}].verbs"),
                              _strings(rule["resources"], f"{where}.rules[{i}].resources"),
                              _strings(rule.get("namespaces"), f"{where}.rules[{i}].namespaces"),
                              _strings(rule.get("clusters"), f"{where}.rules[{i}].clusters")))
        out[str(token)] = Identity(str(spec.get("user", token)), tuple(rules))
    return Authorizer(out)
