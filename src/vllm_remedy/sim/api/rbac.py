"""RBAC from the cluster's own Role/ClusterRole/RoleBinding/ClusterRoleBinding objects.

With this, a token whose user is ``system:serviceaccount:llm:vllm-remedy-drift`` gets exactly what
the product's shipped manifests (manifests/rbac-*.yaml) grant once they are applied — so the
least-privilege claim is tested against the real RBAC text, not a test-only rule list.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.sim.store import Store

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"


def groups_of(user: str) -> set[str]:
    """The groups the apiserver adds: authenticated, and the service-account groups for SA users."""
    groups = {"system:authenticated"}
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        groups |= {"system:serviceaccounts", f"system:serviceaccounts:{parts[2]}"}
    return groups


def _binds(binding: Obj, user: str, groups: set[str]) -> bool:
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user:
            return True
        if kind == "Group" and name in groups:
            return True
        if kind == "ServiceAccount" and user == f"system:serviceaccount:{subject.get('namespace', '')}:{name}":
            return True
    return False


def _rule_allows(rule: Obj, verb: str, group: str, resource: str, name: str | None) -> bool:
    def has(key: str, value: str) -> bool:
        values = rule.get(key) or []
        return "*" in values or value in values

    return (has("verbs", verb) and has("apiGroups", group) and has("resources", resource)
            and (not rule.get("resourceNames") or (name is not None and name in rule["resourceNames"])))


def granted_rules(store: Store, user: str, namespace: str | None) -> list[Obj]:
    """Every rule the stored RBAC objects grant ``user``: cluster-wide ones, plus ``namespace``'s."""
    groups = groups_of(user)
    granted: list[Obj] = []
    for binding in store.list(f"clusterrolebindings.{RBAC}")[0]:
        if _binds(binding, user, groups):
            role = store.find(f"clusterroles.{RBAC}", "", (binding.get("roleRef") or {}).get("name", ""))
            granted += (role or {}).get("rules") or []
    if namespace:
        for binding in store.list(f"rolebindings.{RBAC}", namespace)[0]:
            if not _binds(binding, user, groups):
                continue
            ref = binding.get("roleRef") or {}
            role = (store.find(f"clusterroles.{RBAC}", "", ref.get("name", "")) if ref.get("kind") == "ClusterRole"
                    else store.find(f"roles.{RBAC}", namespace, ref.get("name", "")))
            granted += (role or {}).get("rules") or []
    return [rule for rule in granted if isinstance(rule, dict)]


def allows(store: Store, user: str, verb: str, group: str, resource: str, namespace: str | None,
           name: str | None) -> bool:
    """Whether the stored RBAC objects let ``user`` do ``verb`` on ``resource`` (``plural[/sub]``)."""
    return any(_rule_allows(rule, verb, group, resource, name) for rule in granted_rules(store, user, namespace))
