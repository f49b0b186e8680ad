"""GitOps awareness: who reconciles an object from Git, and the Git change that would make a fix stick (pure).

Why: a remediation written straight to a Deployment that Argo CD (self-heal) or Flux reconciles is reverted
within minutes (argo-cd#9570, #5351) — the crash loop comes back and the operator believes it was fixed. So
the dry run and the drift report name the owner, and the policy's ``gitops`` stance decides: ``warn`` (write,
say it will be reverted), ``refuse`` (write nothing) or ``apply`` (write, plus the hint). Either way the
operator gets the change to make in Git: the ``vllm-remedy args set`` command for their manifest and the
patch it produces (same editor as ``args set``: only the argv tokens that change), plus any other field.

Evidence read (an object's own metadata; children such as ReplicaSets carry ownerReferences and are not in Git):

* Argo CD: annotation ``argocd.argoproj.io/tracking-id`` (annotation tracking, ``<app>:<group>/<kind>:<ns>/<name>``),
  label ``argocd.argoproj.io/instance`` (common custom tracking label), a managedFields manager named
  ``argocd…``; label ``app.kubernetes.io/instance`` (Argo CD's legacy label tracking) counts only without
  Helm's own markers, and is reported as *probable* — Helm and hand-written manifests use that label too.
* Flux: labels ``kustomize.toolkit.fluxcd.io/name``/``namespace`` (Kustomization) and
  ``helm.toolkit.fluxcd.io/name``/``namespace`` (HelmRelease). Annotation
  ``kustomize.toolkit.fluxcd.io/reconcile: disabled`` means Flux leaves the object alone.
* Helm (no GitOps controller above it): label ``app.kubernetes.io/managed-by: Helm`` or annotation
  ``meta.helm.sh/release-name``. Nothing reverts the change until the next ``helm upgrade``, which does; the
  hint is the values change (:mod:`vllm_remedy.vllm.helm_values`).
* A controller owner that regenerates its children — a KServe InferenceService, a LeaderWorkerSet — named by
  the object's controller ownerReference: its controller reverts a direct change at once, so the write is
  refused whatever the stance, and the hint says to patch the owner.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import helm_values, manifest
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.manifest_text import ManifestText

ARGO_TRACKING_ID = "argocd.argoproj.io/tracking-id"
ARGO_INSTANCE = "argocd.argoproj.io/instance"
K8S_INSTANCE = "app.kubernetes.io/instance"
FLUX_KS_NAME, FLUX_KS_NAMESPACE = "kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace"
FLUX_HR_NAME, FLUX_HR_NAMESPACE = "helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace"
FLUX_RECONCILE = "kustomize.toolkit.fluxcd.io/reconcile"
HELM_MANAGED_BY = "app.kubernetes.io/managed-by"
HELM_RELEASE, HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-name", "meta.helm.sh/release-namespace"
_HELM_MARKERS = (HELM_RELEASE,)
MODES = ("warn", "refuse", "apply")
#: Controller owners that regenerate their children (a controller ownerReference's kind → the tool named).
OWNING_KINDS = {"InferenceService": "KServe", "LeaderWorkerSet": "LeaderWorkerSet"}


@dataclass(frozen=True)
class Owner:
    """The GitOps controller that reconciles an object, and how we know."""

    tool: str  # "Argo CD" | "Flux" | "Helm" | "KServe" | "LeaderWorkerSet"
    kind: str  # "Application" | "Kustomization" | "HelmRelease" | "release" | "InferenceService" | ...
    name: str
    namespace: str | None
    evidence: str
    certain: bool = True

    @property
    def reverter(self) -> str:
        """What undoes a direct change, as the subject of "would revert a direct change"."""
        return {"Helm": "the next helm upgrade"}.get(self.tool, "self-heal" if not self.controls else
                                                      f"the {self.kind} controller")

    @property
    def place(self) -> str:
        """Where the lasting change must be made."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return ("the release's values" if self.tool == "Helm" else
                f"the {self.kind} {where}" if self.controls else "Git")

    @property
    def controls(self) -> bool:
        """An owner whose controller regenerates the object (not a Git or Helm source): always refused."""
        return self.kind in OWNING_KINDS

    def describe(self) -> str:
        """The owner as a phrase for warning and refusal lines; "probably" when only the legacy label says so."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        maybe = "" if self.certain else "probably "
        return f"{maybe}managed by {self.tool} {self.kind} {where} ({self.evidence})"

    def to_json(self) -> dict[str, Any]:
        """The owner for the drift report's ``gitops`` entry, ``certain`` kept so scripts can tell a guess."""
        return {"tool": self.tool, "kind": self.kind, "name": self.name, "namespace": self.namespace,
                "evidence": self.evidence, "certain": self.certain, "reverted_by": self.reverter}


def detect(obj: Mapping[str, Any]) -> Owner | None:
    """The Argo CD / Flux owner of ``obj`` from its labels, annotations and field managers, or None."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            tool = OWNING_KINDS.get(str(ref.get("kind")))
            # a controller's child (ReplicaSet, Pod): generated, not in Git; a ControllerRevision is its owner's
            # history record, whose annotations (our crash records) no controller reverts
            if tool is None or obj.get("kind") == "ControllerRevision":
                return None
            return Owner(tool, str(ref.get("kind")), str(ref.get("name")), meta.get("namespace"),
                         f"ownerReference {ref.get('kind')}/{ref.get('name')}")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    notes = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
    tracking = notes.get(ARGO_TRACKING_ID)
    if tracking:
        app = tracking.split(":", 1)[0]
        namespace, _, name = app.rpartition("_")  # apps in any namespace: "<ns>_<app>"
        return Owner("Argo CD", "Application", name, namespace or None, f"annotation {ARGO_TRACKING_ID}={tracking}")
    if labels.get(ARGO_INSTANCE):
        return Owner("Argo CD", "Application", labels[ARGO_INSTANCE], None,
                     f"label {ARGO_INSTANCE}={labels[ARGO_INSTANCE]}")
    for key_name, key_ns, kind in ((FLUX_KS_NAME, FLUX_KS_NAMESPACE, "Kustomization"),
                                   (FLUX_HR_NAME, FLUX_HR_NAMESPACE, "HelmRelease")):
        if labels.get(key_name):
            if kind == "Kustomization" and notes.get(FLUX_RECONCILE) == "disabled":
                return None
            return Owner("Flux", kind, labels[key_name], labels.get(key_ns), f"label {key_name}={labels[key_name]}")
    managers = sorted({str(m.get("manager")) for m in meta.get("managedFields") or []
                       if isinstance(m, Mapping) and str(m.get("manager", "")).startswith("argocd")})
    instance = labels.get(K8S_INSTANCE)
    if managers:
        return Owner("Argo CD", "Application", instance or "?", None, f"field manager {managers[0]}")
    helm = labels.get("app.kubernetes.io/managed-by") == "Helm" or any(k in notes for k in _HELM_MARKERS)
    if instance and not helm:
        return Owner("Argo CD", "Application", instance, None, f"label {K8S_INSTANCE}={instance} "
                     "(Argo CD label tracking; Helm or a hand-written manifest may set it too)", certain=False)
    if helm:
        release = notes.get(HELM_RELEASE) or instance or "?"
        evidence = (f"annotation {HELM_RELEASE}={notes[HELM_RELEASE]}" if notes.get(HELM_RELEASE)
                    else f"label {HELM_MANAGED_BY}=Helm")
        return Owner("Helm", "release", release, notes.get(HELM_RELEASE_NAMESPACE) or meta.get("namespace"),
                     evidence)
    return None


@dataclass(frozen=True)
class GitHint:
    """The change to make in Git: ``args set`` for the vLLM flags, the patch it makes, and other fields."""

    set: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    patch: str = ""  # unified diff of the manifest, argv edited the way `args set` edits it
    other: tuple[str, ...] = ()  # non-argv template fields that change, "path: old -> new"
    instead: tuple[str, ...] = ()  # replaces the Git lines for owners that are not Git (Helm, a controller owner)

    @property
    def command(self) -> str:
        """The ``vllm-remedy args set`` line to run on the manifest in Git (empty when no flag changes)."""
        if not self.set and not self.unset:
            return ""
        parts = [f"--set {k}={v}" for k, v in self.set.items()] + [f"--unset {k}" for k in self.unset]
        return "vllm-remedy args set -f <manifest in Git> " + " ".join(parts)

    def lines(self) -> list[str]:
        """The hint as ``git:`` lines under a gitops warning or refusal: the command, other fields, then the patch."""
        if self.instead:
            return list(self.instead)
        out = [f"git: {self.command}"] if self.command else []
        out += [f"git: also change {o}" for o in self.other]
        out += [f"git: {line}" for line in self.patch.rstrip("\n").splitlines()]
        return out


def _clean(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a manifest in Git holds of a live object: no status, server bookkeeping or our own annotations."""
    meta = obj.get("metadata") or {}
    keep = {k: meta[k] for k in ("name", "namespace", "labels") if k in meta}
    out: dict[str, Any] = {"apiVersion": obj.get("apiVersion", "apps/v1"), "kind": obj.get("kind", "Deployment"),
                           "metadata": keep}
    out["spec"] = copy.deepcopy(dict(obj.get("spec") or {}))
    return out


def _paths(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            out += _paths(old.get(key), new.get(key), f"{path}.{key}" if path else str(key))
        return out
    return [] if old == new else [f"{path}: {_short(old)} -> {_short(new)}"]


def _short(value: Any) -> str:
    text = "unset" if value is None else str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def git_hint(before: Mapping[str, Any], after: Mapping[str, Any], container: str | None = None,
             where: str = "manifest") -> GitHint:
    """The Git change equivalent to turning Deployment ``before`` into ``after`` (pure).

    Flag changes become ``args set`` options and are applied to a YAML rendering of ``before`` with the
    same in-place argv editor ``args set`` uses; every other changed field of ``spec`` is listed.
    """
    old, new = _clean(before), _clean(after)
    old_spec = (old["spec"].get("template") or {}).get("spec") or {}
    new_spec = (new["spec"].get("template") or {}).get("spec") or {}
    try:
        server_old, server_new = find_server(old_spec, container), find_server(new_spec, container)
    except UserError:
        return GitHint(other=tuple(_paths(old["spec"], new["spec"], "spec")))
    set_ = {k: v for k, v in server_new.flags.items() if server_old.flags.get(k) != v}
    unset = tuple(k for k in server_old.flags if k not in server_new.flags)
    text = manifest.dump_documents([old])
    stream = ManifestText(text, where)
    patch = ""
    if set_ or unset:
        edited = server_old.edit(set_, unset)
        live = next(c for c in stream.documents[0]["spec"]["template"]["spec"]["containers"]
                    if c.get("name") == server_old.container_name)
        for key in ("command", "args"):
            if edited.get(key) != live.get(key) and edited.get(key) is not None:
                stream.set_list(live, key, list(edited[key]))
        patch = "".join(difflib.unified_diff(text.splitlines(keepends=True), stream.render().splitlines(keepends=True),
                                             fromfile=f"a/{where}", tofile=f"b/{where}", n=2))
        patched = stream.documents[0]["spec"]
    else:
        patched = old["spec"]
    other = tuple(_paths(patched, new["spec"], "spec"))
    return GitHint(set_, unset, patch, other)


def hint_for(owner: Owner, before: Mapping[str, Any], after: Mapping[str, Any], container: str | None = None,
             where: str = "manifest") -> GitHint:
    """The hint fitting the owner: the Git edit, the Helm values change, or "patch the owner" (pure)."""
    hint = git_hint(before, after, container, where)
    if owner.controls:
        flags = [f"--set {k}={v}" for k, v in hint.set.items()] + [f"--unset {k}" for k in hint.unset]
        return GitHint(hint.set, hint.unset, other=hint.other, instead=(
            f"owner: change {owner.place} (the vLLM args of its template{': ' + ' '.join(flags) if flags else ''}); "
            "its controller rolls the change out to this object",))
    if owner.tool != "Helm":
        return hint
    meta = before.get("metadata") or {}
    try:
        old = find_server(((before.get("spec") or {}).get("template") or {}).get("spec") or {}, container).flags
        new = find_server(((after.get("spec") or {}).get("template") or {}).get("spec") or {}, container).flags
    except UserError:
        old = new = {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    lines = helm_values.helm_lines(owner.name, owner.namespace or str(meta.get("namespace")), labels, old, new,
                                   hint.other, before, after)
    return GitHint(hint.set, hint.unset, other=hint.other, instead=tuple(lines))


@dataclass(frozen=True)
class Verdict:
    """What a write to a GitOps-managed object does under the policy's stance."""

    write: bool
    lines: tuple[str, ...]
    refusal: str | None = None
    shown: bool = False  # printed by this call (the operations' gate): a refusal's failure need not repeat it


def verdict(mode: str, owner: Owner | None, where: str, hint: GitHint | None = None) -> Verdict:
    """``warn``/``apply`` write and say why it will not last (+ the Git hint); ``refuse`` writes nothing."""
    if owner is None:
        return Verdict(True, ())
    if mode not in MODES:
        raise UserError(f"policy gitops: {mode!r}: expected one of {', '.join(MODES)}")
    git = tuple(hint.lines()) if hint is not None else ()
    if owner.controls:
        refusal = (f"{where} is owned by {owner.kind} {owner.namespace}/{owner.name} ({owner.evidence}); "
                   f"{owner.reverter} reverts a direct change at once: nothing written — patch the {owner.kind}, "
                   "not its child")
        return Verdict(False, git, refusal)
    if mode == "refuse":
        refusal = (f"{where} is {owner.describe()}; {owner.reverter} would revert a direct change, and policy gitops "
                   f"is refuse: nothing written — make the change in {owner.place}")
        return Verdict(False, git, refusal)
    if owner.tool == "Helm":
        head = (f"warning: {where} is {owner.describe()}: the next helm upgrade will revert this change; make it in "
                "the release's values too" if mode == "warn" else f"note: {where} is {owner.describe()}; applying "
                "(policy gitops: apply) — make the same change in the release's values or the next helm upgrade "
                "reverts it")
        return Verdict(True, (head, *git))
    head = (f"warning: {where} is {owner.describe()}: a sync/self-heal will revert this change; make it in Git too"
            if mode == "warn" else f"note: {where} is {owner.describe()}; applying (policy gitops: apply) — "
            "make the same change in Git or the next sync reverts it")
    return Verdict(True, (head, *git))
