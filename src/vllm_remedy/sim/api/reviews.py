"""The self-reviews kubectl's ``auth`` commands create: access (``can-i``), rules (``can-i --list``), identity
(``whoami``). Answered from the request and the caller's rules alone; nothing is stored."""

from __future__ import annotations

from typing import Any

from vllm_remedy.sim.api import rbac
from vllm_remedy.sim.api.auth import Authorizer, Identity
from vllm_remedy.sim.api.http import Request, Response, json_response
from vllm_remedy.sim.api.resources import RESOURCES
from vllm_remedy.sim.protocols import ClusterParts
from vllm_remedy.sim.store import ApiError

Obj = dict[str, Any]
ADMIN = "kubernetes-admin"  # who a kubeconfig without a token is, when auth is off (kubeadm's admin user)
ADMIN_GROUPS = ["kubeadm:cluster-admins", "system:authenticated"]
# system:basic-user and system:discovery, bound to every authenticated user on a real cluster
BASIC_RULES: list[Obj] = [
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}]
DISCOVERY = {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                                   "/openapi", "/openapi/*", "/readyz", "/version", "/version/"]}


def access_review(cluster: ClusterParts, name: str, auth: Authorizer, req: Request,
                  identity: Identity | None) -> Response:
    """SelfSubjectAccessReview: would this caller be allowed? (``kubectl auth can-i``)."""
    review = req.object_body()
    attrs = (review.get("spec") or {}).get("resourceAttributes") or {}
    if not isinstance(attrs, dict):
        raise ApiError(400, "BadRequest", "spec.resourceAttributes must be an object")
    group, resource, sub = (str(attrs.get(k) or "") for k in ("group", "resource", "subresource"))
    key = f"{resource}/{sub}" if sub else resource
    key += f".{group}" if group else ""
    try:
        auth.authorize(identity, name, str(attrs.get("verb") or ""), key, attrs.get("namespace") or None,
                       attrs.get("name") or None, cluster.store)
        status = {"allowed": True}
    except ApiError:
        status = {"allowed": False}  # RBAC gives no reason for a denial; kubectl prints a bare "no"
    review.update(apiVersion="authorization.k8s.io/v1", kind="SelfSubjectAccessReview", status=status)
    review.setdefault("metadata", {})
    return json_response(review, 201)


def _token_rules(rule: Any) -> list[Obj]:
    """A token rule (``deployments.apps``, ``pods/log``, ``*``) as RBAC rules, one per API group: one rule's
    apiGroups × resources is a cross product, so ``pods`` and ``deployments.apps`` in one would also grant
    ``pods.apps`` and ``deployments`` in the core group. A group-less name stands for the groups serving it."""
    by_group: dict[str, set[str]] = {}
    for item in rule.resources:
        plural, _, group = item.partition(".")
        if group:
            groups = [group]
        else:  # ``*`` or a name the sim does not serve: any group, as the token rule matches it
            groups = sorted({r.group for r in RESOURCES if r.plural == plural.partition("/")[0]}) or ["*"]
        for g in groups:
            by_group.setdefault(g, set()).add(plural)
    return [{"verbs": sorted(rule.verbs), "apiGroups": [group], "resources": sorted(plurals)}
            for group, plurals in sorted(by_group.items())]


def rules_review(cluster: ClusterParts, name: str, req: Request, identity: Identity | None) -> Response:
    """SelfSubjectRulesReview: every rule the caller has in ``spec.namespace`` (``kubectl auth can-i --list``)."""
    review = req.object_body()
    namespace = str((review.get("spec") or {}).get("namespace") or "")
    if identity is None:
        rules = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
        non_resource = [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
    else:
        rules = [out for r in identity.rules if (not r.clusters or name in r.clusters)
                 and (not r.namespaces or namespace in r.namespaces) for out in _token_rules(r)]
        rules += [{k: v for k, v in r.items() if k in ("verbs", "apiGroups", "resources", "resourceNames")}
                  for r in rbac.granted_rules(cluster.store, identity.user, namespace or None) if r.get("resources")]
        rules += BASIC_RULES
        non_resource = [DISCOVERY]
    review.update(apiVersion="authorization.k8s.io/v1", kind="SelfSubjectRulesReview",
                  status={"resourceRules": rules, "nonResourceRules": non_resource, "incomplete": False})
    review.setdefault("metadata", {})
    return json_response(review, 201)


def identity_review(identity: Identity | None) -> Response:
    """SelfSubjectReview: who the caller is (``kubectl auth whoami``)."""
    user = {"username": ADMIN, "groups": ADMIN_GROUPS} if identity is None else {
        "username": identity.user, "groups": sorted(rbac.groups_of(identity.user))}
    return json_response({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                          "metadata": {"creationTimestamp": None}, "status": {"userInfo": user}}, 201)
