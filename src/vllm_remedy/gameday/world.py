"""The game's writes: world set-up, the fault, and putting everything back exactly as it was.

Every change goes through the API as a guarded JSON patch (re-read and re-applied on a conflict), and
everything the game may touch is captured first, so ``Restorer.restore`` can return the cluster to its
pre-game state — also after an interrupted run or a remediation that went somewhere unexpected.
"""

from __future__ import annotations

import contextlib
import copy
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from vllm_remedy.errors import UserError
from vllm_remedy.gameday.scenario import Scenario, Step
from vllm_remedy.gameday.targets import Target
from vllm_remedy.kube.annotations import Keys, known_good_annotations, rfc3339
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import ConflictError, NotFoundError
from vllm_remedy.kube.health import pod_health
from vllm_remedy.kube.history import CHANGE_CAUSE, HASH_LABEL, REVISION
from vllm_remedy.kube.patch import json_patch
from vllm_remedy.sim.seed import set_path

Obj = dict[str, Any]
GATEWAY = "gateway.networking.k8s.io/v1"
_NOW = re.compile(r"\$\{now(?:([+-])(\d+)([smhd]))?\}")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def route_path(ns: str, name: str) -> str:
    """API path of a Gateway API HTTPRoute: the fallback route that load shedding shifts and the observer reads."""
    return f"/apis/{GATEWAY}/namespaces/{quote(ns)}/httproutes/{quote(name)}"


def object_path(resource: str, obj: Obj) -> str:
    """API path of ``obj`` for a store-style resource key (``pods``, ``httproutes.gateway.networking.k8s.io``)."""
    plural, _, group = resource.partition(".")
    version = "v1"
    base = f"/apis/{group}/{version}" if group else "/api/v1"
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    scope = f"/namespaces/{quote(ns)}" if ns else ""
    return f"{base}{scope}/{plural}/{quote(str(meta.get('name', '')))}"


def expand(value: Any, now: float) -> Any:
    """``${now}``, ``${now-1h}``, ``${now+2h}`` → RFC 3339 in cluster time (toggle expiries)."""
    if isinstance(value, str):
        def sub(m: re.Match[str]) -> str:
            delta = 0 if not m.group(1) else int(m.group(2)) * _UNITS[m.group(3)] * (1 if m.group(1) == "+" else -1)
            return rfc3339(now + delta)
        return _NOW.sub(sub, value)
    if isinstance(value, list):
        return [expand(v, now) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, now) for k, v in value.items()}
    return value


def edit(client: KubeClient, path: str, mutate: Callable[[Obj], None], attempts: int = 8) -> Obj:
    """GET, mutate a copy, send the difference as a guarded JSON patch; re-read and redo on a conflict."""
    for attempt in range(attempts):
        current = client.request("GET", path)
        wanted = copy.deepcopy(current)
        mutate(wanted)
        ops = json_patch(current, wanted)
        if len(ops) <= 1:  # only the resourceVersion test: nothing to change
            return current
        try:
            return client.request("PATCH", path, body=ops, content_type="application/json-patch+json")
        except ConflictError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")  # pragma: no cover


def observed(client: KubeClient, target: Target, seconds: float = 10.0) -> None:
    """Wait (wall clock, briefly) until the workload's controller has seen the last write: each workload step is
    one revision, and two steps patched before the controller looked would collapse into one."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if target.observed(client.request("GET", target.path)):
            return
        time.sleep(0.05)


def _annotate(obj: Obj, notes: dict[str, str | None]) -> None:
    meta = obj.setdefault("metadata", {})
    current = dict(meta.get("annotations") or {})
    for key, value in notes.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    meta["annotations"] = current


@dataclass
class Applied:
    """What one step did, for the timeline and the report."""

    what: str
    at: float  # cluster time
    objects: list[str] = field(default_factory=list)


@dataclass
class Restorer:
    """Captures the pre-game state of everything a scenario can touch, and puts it back."""

    client: KubeClient
    scenario: Scenario
    keys: Keys
    deployment: Obj = field(default_factory=dict)  # the target workload, whatever its kind
    replicasets: dict[str, dict[str, str]] = field(default_factory=dict)  # history object name → our annotations
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)  # name → annotations
    node_specs: dict[str, Obj] = field(default_factory=dict)  # name → spec (cordon, taints)
    routes: dict[str, Obj | None] = field(default_factory=dict)  # name → object (None: did not exist)
    created: list[tuple[str, Obj]] = field(default_factory=list)
    #: The pre-game template as the API server stored it when the restore wrote it back: a server defaults what
    #: it is sent (imagePullPolicy, probes' thresholds), so the captured object need not read the same field by field.
    written_template: Obj | None = None

    def capture(self) -> None:
        """Read all the game may touch before anything changes: the target, our marks on its history (ReplicaSets,
        ControllerRevisions), node annotations, routes. A missing target is a UserError naming the scenario."""
        sc, target = self.scenario, self.scenario.target
        try:
            self.deployment = self.client.request("GET", target.path)
        except NotFoundError:
            raise UserError(f"{self.client.context}: {target.label()} not found ({sc.source}: target)") from None
        for rs in self._history():
            meta = rs["metadata"]
            self.replicasets[meta["name"]] = {k: v for k, v in (meta.get("annotations") or {}).items()
                                              if self.keys.ours(k)}
        for node in self.client.list_nodes():
            self.nodes[node["metadata"]["name"]] = dict(node["metadata"].get("annotations") or {})
            self.node_specs[node["metadata"]["name"]] = copy.deepcopy(node.get("spec") or {})
        for name in self._route_names():
            try:
                self.routes[name] = self.client.request("GET", route_path(sc.namespace, name))
            except NotFoundError:
                self.routes[name] = None

    def _route_names(self) -> set[str]:
        sc = self.scenario
        names = {s.name for s in (*sc.world, *sc.fault) if s.kind == "route"}
        if sc.route:
            names.add(sc.route)
        return names

    # -- steps ---------------------------------------------------------------------------------

    def create_objects(self, now: float) -> Applied:
        """Create the scenario's extra world objects (``${now}`` expanded) and remember them for the restore."""
        done = Applied("world objects", now)
        for entry in self.scenario.objects:
            obj = copy.deepcopy(entry["object"])
            path = object_path(str(entry["resource"]), obj)
            collection = path.rsplit("/", 1)[0]
            self.client.request("POST", collection, body=expand(obj, now))
            self.created.append((path, obj))
            done.objects.append(path)
        return done

    def mark_known_good(self, now: float) -> Applied:
        """Mark the running revision known-good, as ``confirm`` would have after it proved itself."""
        sc = self.scenario
        dep = self.client.get_deployment(sc.namespace, sc.deployment)
        revision = (dep["metadata"].get("annotations") or {}).get(REVISION)
        for rs in self.client.list_replicasets(sc.namespace):
            notes = rs["metadata"].get("annotations") or {}
            if notes.get(REVISION) == revision and _owned(rs, dep):
                path = f"/apis/apps/v1/namespaces/{quote(sc.namespace)}/replicasets/{quote(rs['metadata']['name'])}"
                marks = known_good_annotations(self.keys, now, "game-day world: the revision running before the game")
                edit(self.client, path, lambda o, m=marks: _annotate(o, dict(m)))
                return Applied(f"mark revision {revision} known-good", now, [path])
        raise UserError(f"{sc.source}: world.known-good: no ReplicaSet for revision {revision}")

    def apply(self, step: Step, now: float) -> Applied:
        """One world or fault step, as a real API write."""
        sc = self.scenario
        values = expand(step.set, now)
        notes = expand(step.annotations, now)
        done = Applied(step.what, now)
        if step.kind == sc.kind:
            def change(obj: Obj) -> None:
                for path, value in values.items():
                    set_path(obj, path, value, f"{sc.source}: {step.what}")
                _annotate(obj, notes)
                if step.change_cause:
                    _annotate(obj, {CHANGE_CAUSE: step.change_cause})
            path = sc.target.path
            edit(self.client, path, change)
            observed(self.client, sc.target)
            done.objects.append(path)
        elif step.kind == "nodes":
            for node in self.client.list_nodes(step.selector):
                path = f"/api/v1/nodes/{quote(node['metadata']['name'])}"

                def change_node(obj: Obj) -> None:
                    for key, value in values.items():
                        set_path(obj, key, value, f"{sc.source}: {step.what}")
                    _annotate(obj, notes)
                edit(self.client, path, change_node)
                done.objects.append(path)
            if not done.objects:
                raise UserError(f"{sc.source}: {step.what}: no node matches {step.selector!r}")
        elif step.kind == "route":
            path = route_path(sc.namespace, step.name)
            edit(self.client, path, lambda o: [set_path(o, p, v, f"{sc.source}: {step.what}")
                                               for p, v in values.items()] and None)
            done.objects.append(path)
        elif step.kind == "delete-pods":
            for pod in self.client.list_pods(sc.namespace, step.selector):
                path = f"/api/v1/namespaces/{quote(sc.namespace)}/pods/{quote(pod['metadata']['name'])}"
                try:
                    self.client.request("DELETE", path)
                except NotFoundError:
                    continue
                done.objects.append(path)
        return done

    # -- restore -------------------------------------------------------------------------------

    def restore(self) -> list[str]:
        """Put back the pre-game state; returns what it changed (one line each). Never raises for one object."""
        sc, out = self.scenario, []
        errors: list[str] = []

        def attempt(label: str, action: Callable[[], Any]) -> None:
            try:
                action()
                out.append(label)
            except Exception as exc:  # keep restoring the rest; report it
                errors.append(f"{label}: {exc}")

        if self.deployment:
            fields = ", ".join(f"spec.{f}" for f in sc.target.adapter.restore_fields)
            attempt(f"{sc.target.label()}: pre-game {fields} and annotations", self._restore_deployment)
        for name, notes in self.nodes.items():
            attempt(f"node {name}: annotations, cordon and taints", lambda n=name, a=notes: self._restore_node(n, a))
        for name, obj in self.routes.items():
            if obj is not None:
                attempt(f"httproute {sc.namespace}/{name}: spec", lambda n=name, o=obj: edit(
                    self.client, route_path(sc.namespace, n), lambda cur, o=o: cur.update(
                        spec=copy.deepcopy(o.get("spec")))))
        for path, _obj in reversed(self.created):
            attempt(f"delete {path}", lambda p=path: _delete(self.client, p))
        attempt(f"{sc.target.adapter.history} marks", self._restore_marks)
        if errors:
            raise RestoreError(errors, out)
        return out

    def _restore_deployment(self) -> None:
        sc, before = self.scenario, self.deployment

        def back(obj: Obj) -> None:
            sc.target.restored_spec(before, obj)
            keep = {k: v for k, v in (obj["metadata"].get("annotations") or {}).items()
                    if k.startswith("deployment.kubernetes.io/")}
            obj["metadata"]["annotations"] = {
                **{k: v for k, v in (before["metadata"].get("annotations") or {}).items()
                   if not k.startswith("deployment.kubernetes.io/")}, **keep}
        written = edit(self.client, sc.target.path, back)
        self.written_template = sc.target.template(written)
        if sc.target.adapter.delete_unready:
            for pod in self.client.list_pods(sc.namespace, sc.target.selector(written)):
                if not pod_health(pod).ready:
                    name = quote(pod["metadata"]["name"])
                    _delete(self.client, f"/api/v1/namespaces/{quote(sc.namespace)}/pods/{name}")

    def _restore_node(self, name: str, notes: dict[str, str]) -> None:
        spec = self.node_specs.get(name) or {}

        def back(obj: Obj) -> None:
            obj["metadata"]["annotations"] = dict(notes)
            current = obj.setdefault("spec", {})
            for key in ("unschedulable", "taints"):
                if key in spec:
                    current[key] = copy.deepcopy(spec[key])
                else:
                    current.pop(key, None)
        with contextlib.suppress(NotFoundError):
            edit(self.client, f"/api/v1/nodes/{quote(name)}", back)

    def _restore_marks(self) -> None:
        """Known-good marks and our annotations on the history objects as they were: a game must not bless a
        revision."""
        target = self.scenario.target
        for rs in self._history():
            name = rs["metadata"]["name"]
            ours = {k: v for k, v in (rs["metadata"].get("annotations") or {}).items() if self.keys.ours(k)}
            wanted = self.replicasets.get(name, {})
            if ours == wanted:
                continue
            change: dict[str, str | None] = {k: None for k in ours if k not in wanted}
            change.update(wanted)
            edit(self.client, target.history_path(name), lambda o, c=change: _annotate(o, c))

    def _history(self) -> list[Obj]:
        """The target's revision history objects in its namespace (ReplicaSets, ControllerRevisions)."""
        return list(self.client.request("GET", self.scenario.target.history_path()).get("items") or [])

    def template_restored(self) -> bool:
        """Is the target's pod template the pre-game one (ignoring the controller's hash label)?"""
        target = self.scenario.target
        now = self.client.request("GET", target.path)
        wanted = self.written_template if self.written_template is not None else target.template(self.deployment)
        return _bare(target.template(now)) == _bare(wanted)


class RestoreError(Exception):
    """Some objects could not be put back; ``done`` lists those that were, so the report shows a partial restore."""

    def __init__(self, errors: list[str], done: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors, self.done = errors, done


def _bare(template: Obj) -> Obj:
    out = copy.deepcopy(template)
    (out.get("metadata") or {}).get("labels", {}).pop(HASH_LABEL, None)
    return out


def _owned(rs: Obj, dep: Obj) -> bool:
    uid = dep["metadata"].get("uid")
    return any(ref.get("uid") == uid for ref in rs["metadata"].get("ownerReferences") or [])


def _delete(client: KubeClient, path: str) -> None:
    with contextlib.suppress(NotFoundError):
        client.request("DELETE", path)
