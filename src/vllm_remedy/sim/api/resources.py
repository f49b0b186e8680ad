"""The resource types the rehearsal cluster serves, and the discovery documents kubectl reads.

kubectl maps ``deploy`` → deployments.apps through these documents alone (shortNames, categories),
so every field here is one kubectl or the Python client actually looks at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Resource:
    """One served resource type; ``key`` is the store/RBAC name (``deployments.apps``)."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # name -> (kind, group, version)
    crd: bool = False  # custom resources: no strategic merge patch, as in real clusters
    verbs: tuple[str, ...] = ALL_VERBS
    stored: bool = True  # False: a review answered from the request alone (SelfSubjectAccessReview)
    stored_as: str = ""  # another resource's storage, converted on read (events.k8s.io Events are core Events)
    needs_crd: bool = False  # served only while its CustomResourceDefinition (``<plural>.<group>``) is stored

    @property
    def key(self) -> str:
        """The store key, plural.group, unique across API groups."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def store_key(self) -> str:
        """Where its objects live in the store (its own key unless it is a view of another resource)."""
        return self.stored_as or self.key

    @property
    def api_version(self) -> str:
        """group/version, or bare version for the core group, as objects carry it."""
        return f"{self.group}/{self.version}" if self.group else self.version


GATEWAY = "gateway.networking.k8s.io"
AUTHZ = "authorization.k8s.io"
LWS = "leaderworkerset.x-k8s.io"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"  # the store key of CustomResourceDefinitions
RBAC = "rbac.authorization.k8s.io"
KSERVE = "serving.kserve.io"

RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "namespaces", "namespace", "Namespace", namespaced=False, short_names=("ns",),
             subresources={"status": ("Namespace", "", "v1")}),
    Resource("", "v1", "nodes", "node", "Node", namespaced=False, short_names=("no",),
             subresources={"status": ("Node", "", "v1")}),
    Resource("", "v1", "pods", "pod", "Pod", short_names=("po",), categories=("all",),
             subresources={"status": ("Pod", "", "v1"), "log": ("Pod", "", "v1"),
                           "proxy": ("PodProxyOptions", "", "v1"), "exec": ("PodExecOptions", "", "v1"),
                           "attach": ("PodAttachOptions", "", "v1"),
                           "portforward": ("PodPortForwardOptions", "", "v1")}),
    Resource("", "v1", "events", "event", "Event", short_names=("ev",)),
    Resource("events.k8s.io", "v1", "events", "event", "Event", short_names=("ev",), verbs=("get", "list", "watch"),
             stored_as="events"),
    Resource("", "v1", "configmaps", "configmap", "ConfigMap", short_names=("cm",)),
    Resource("", "v1", "secrets", "secret", "Secret"),
    Resource("", "v1", "services", "service", "Service", short_names=("svc",), categories=("all",),
             subresources={"status": ("Service", "", "v1"), "proxy": ("ServiceProxyOptions", "", "v1")}),
    Resource("", "v1", "endpoints", "endpoints", "Endpoints", short_names=("ep",)),
    Resource("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice"),
    Resource("apps", "v1", "deployments", "deployment", "Deployment", short_names=("deploy",), categories=("all",),
             subresources={"status": ("Deployment", "apps", "v1"), "scale": ("Scale", "autoscaling", "v1")}),
    Resource("apps", "v1", "replicasets", "replicaset", "ReplicaSet", short_names=("rs",), categories=("all",),
             subresources={"status": ("ReplicaSet", "apps", "v1"), "scale": ("Scale", "autoscaling", "v1")}),
    Resource("apps", "v1", "statefulsets", "statefulset", "StatefulSet", short_names=("sts",), categories=("all",),
             subresources={"status": ("StatefulSet", "apps", "v1"), "scale": ("Scale", "autoscaling", "v1")}),
    Resource("apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision"),
    Resource(GATEWAY, "v1", "httproutes", "httproute", "HTTPRoute", categories=("gateway-api",),
             subresources={"status": ("HTTPRoute", GATEWAY, "v1")}, crd=True),
    Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
             "CustomResourceDefinition", namespaced=False, short_names=("crd", "crds"),
             subresources={"status": ("CustomResourceDefinition", "apiextensions.k8s.io", "v1")}),
    Resource(LWS, "v1", "leaderworkersets", "leaderworkerset", "LeaderWorkerSet", short_names=("lws",),
             subresources={"status": ("LeaderWorkerSet", LWS, "v1"), "scale": ("Scale", "autoscaling", "v1")},
             crd=True, needs_crd=True),
    Resource("coordination.k8s.io", "v1", "leases", "lease", "Lease"),
    Resource("karpenter.sh", "v1", "nodepools", "nodepool", "NodePool", namespaced=False,
             subresources={"status": ("NodePool", "karpenter.sh", "v1")}, crd=True, needs_crd=True),
    Resource(KSERVE, "v1beta1", "inferenceservices", "inferenceservice", "InferenceService", short_names=("isvc",),
             subresources={"status": ("InferenceService", KSERVE, "v1beta1")}, crd=True, needs_crd=True),
    Resource(KSERVE, "v1alpha1", "servingruntimes", "servingruntime", "ServingRuntime", crd=True, needs_crd=True),
    Resource(KSERVE, "v1alpha1", "clusterservingruntimes", "clusterservingruntime", "ClusterServingRuntime",
             namespaced=False, crd=True, needs_crd=True),
    Resource("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", short_names=("sa",)),
    Resource("batch", "v1", "cronjobs", "cronjob", "CronJob", short_names=("cj",), categories=("all",),
             subresources={"status": ("CronJob", "batch", "v1")}),
    Resource("batch", "v1", "jobs", "job", "Job", categories=("all",), subresources={"status": ("Job", "batch", "v1")}),
    Resource(RBAC, "v1", "roles", "role", "Role"),
    Resource(RBAC, "v1", "rolebindings", "rolebinding", "RoleBinding"),
    Resource(RBAC, "v1", "clusterroles", "clusterrole", "ClusterRole", namespaced=False),
    Resource(RBAC, "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", namespaced=False),
    Resource(AUTHZ, "v1", "selfsubjectaccessreviews", "", "SelfSubjectAccessReview", namespaced=False,
             verbs=("create",), stored=False),
    Resource(AUTHZ, "v1", "selfsubjectrulesreviews", "", "SelfSubjectRulesReview", namespaced=False,
             verbs=("create",), stored=False),
    Resource("authentication.k8s.io", "v1", "selfsubjectreviews", "", "SelfSubjectReview", namespaced=False,
             verbs=("create",), stored=False),
)

BY_PATH: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KEY: dict[str, Resource] = {r.key: r for r in RESOURCES}
BY_KIND: dict[tuple[str, str], Resource] = {(r.api_version, r.kind): r for r in RESOURCES}
GROUPS: dict[str, str] = {}  # group -> preferred version (the first listed)
for _r in RESOURCES:
    GROUPS.setdefault(_r.group, _r.version)

SUBRESOURCE_VERBS = {"status": ("get", "patch", "update"), "scale": ("get", "patch", "update"),
                     "log": ("get",), "proxy": ("create", "delete", "get", "patch", "update"),
                     "exec": ("create", "get"), "attach": ("create", "get"), "portforward": ("create", "get")}


def crd_object(r: Resource) -> Obj:
    """The CustomResourceDefinition installing ``r`` (what the product's manifests leave behind for discovery)."""
    names = {"kind": r.kind, "listKind": f"{r.kind}List", "plural": r.plural, "singular": r.singular}
    if r.short_names:
        names["shortNames"] = list(r.short_names)
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    version = {"name": r.version, "served": True, "storage": True, "schema": schema,
               "subresources": {k: {} for k in r.subresources}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": r.key},
            "spec": {"group": r.group, "scope": "Namespaced" if r.namespaced else "Cluster", "names": names,
                     "versions": [version]}}


def is_served(r: Resource, crds: frozenset[str] | None) -> bool:
    """Whether ``r`` is served given the installed CRD names (None: every CRD counts as installed)."""
    return not r.needs_crd or crds is None or r.key in crds


def lookup(group: str, version: str, plural: str, crds: frozenset[str] | None = None) -> Resource | None:
    """The resource a URL names, None when the sim does not serve it (a 404) — a CRD kind until it is installed."""
    found = BY_PATH.get((group, version, plural))
    return found if found is not None and is_served(found, crds) else None


def resource_list(group: str, version: str, crds: frozenset[str] | None = None) -> Obj | None:
    """``APIResourceList`` for /api/v1 or /apis/<group>/<version>; None for an unknown group/version."""
    served = [r for r in RESOURCES if r.group == group and r.version == version and is_served(r, crds)]
    if not served:
        return None
    entries: list[Obj] = []
    for r in served:
        entry: Obj = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
                      "verbs": list(r.verbs)}
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        entries.append(entry)
        for sub, (kind, sub_group, sub_version) in r.subresources.items():
            sub_entry: Obj = {"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                              "kind": kind, "verbs": list(SUBRESOURCE_VERBS[sub])}
            if sub_group != group or sub_version != version:
                sub_entry.update(group=sub_group, version=sub_version)
            entries.append(sub_entry)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": served[0].api_version,
            "resources": entries}


def api_versions() -> Obj:
    """``GET /api`` — the legacy core group."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:443"}]}


def api_group(group: str, crds: frozenset[str] | None = None) -> Obj | None:
    """The APIGroup discovery document kubectl fetches before using a group (its preferred version first)."""
    versions = list(dict.fromkeys(r.version for r in RESOURCES if r.group == group and is_served(r, crds)))
    if not group or not versions:
        return None
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(crds: frozenset[str] | None = None) -> Obj:
    """``GET /apis`` — every named group with its served versions."""
    groups = [g for g in (api_group(g, crds) for g in sorted(GROUPS) if g) if g is not None]
    for g in groups:
        assert g is not None
        g.pop("kind")
        g.pop("apiVersion")
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
