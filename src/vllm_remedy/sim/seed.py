"""Seeds: the world a rehearsal cluster starts with — nodes, namespaces, objects, rollout histories.

A seed expresses a Deployment's history as an ordered list of revisions (numbered from
``first-revision``). The older ones are written as the scaled-to-zero ReplicaSets the deployment
controller leaves behind (its own builder: hashes, owner reference, revision and change-cause), and
the controller rolls out only the last — so a long history costs one model load, not one per
revision. Node entries take a GPU shorthand that expands to the labels GPU feature discovery, GKE or
Karpenter put on real nodes; ``dcgm-exporter: true`` adds the GPU operator's DCGM exporter pod on each GPU node;
``models:`` ships config.json files for models outside the catalog (what the world's Hub would serve);
``reality: perturbed | exact`` and ``reality-seed: N`` say how far its vLLM starts stray from the estimate;
``admission: [ExtendedResourceToleration]`` turns on the mutating admission of the cloud it copies (GKE).
"""

from __future__ import annotations

import copy
import re
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.sim import admission
from vllm_remedy.sim.api import resources as api_resources
from vllm_remedy.sim.api.defaults import default_and_validate
from vllm_remedy.sim.controllers.defaults import default_deployment
from vllm_remedy.sim.controllers.images import add_images
from vllm_remedy.sim.controllers.manager import wait_until
from vllm_remedy.sim.controllers.newrs import replicaset_for, set_new_rs_annotations
from vllm_remedy.sim.controllers.scheduler import node_reasons
from vllm_remedy.sim.controllers.util import CHANGE_CAUSE
from vllm_remedy.sim.dcgm_exporter import NAMESPACE as EXPORTER_NAMESPACE
from vllm_remedy.sim.dcgm_exporter import exporter_pod
from vllm_remedy.sim.protocols import SeedTarget
from vllm_remedy.sim.store import ApiError
from vllm_remedy.sim.vllm_pod import model_lookup
from vllm_remedy.sim.vllm_pod.reality import Reality, parse_reality
from vllm_remedy.vllm import resolved
from vllm_remedy.yamlfile import load_packaged, read_yaml

Obj = dict[str, Any]

_STEP = re.compile(r"([^.\[\]]+)|\[([^\]]+)\]")
KUBELET_VERSION = "v1.32.4"
HISTORY_SPACING = 3 * 86400.0  # simulated seconds between seeded history revisions
_NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def packaged_seeds() -> list[str]:
    """Names of the seeds shipped in ``vllm_remedy/sim/seeds`` (``runbook`` is the default world)."""
    folder = resources.files("vllm_remedy.sim") / "seeds"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_seed(ref: Obj | str | Path) -> tuple[Obj, str]:
    """(parsed seed, label for error messages) from a dict, a YAML path, or a packaged seed name."""
    if isinstance(ref, dict):
        return ref, "seed"
    text_ref = str(ref)
    path = Path(text_ref)
    if path.suffix in (".yaml", ".yml") or path.exists():
        data = read_yaml(path, "seed")
        label = str(path)
    else:
        if text_ref not in packaged_seeds():
            raise UserError(f"seed {text_ref!r}: no such file or packaged seed (have: {', '.join(packaged_seeds())})")
        data = _packaged(text_ref)
        label = f"{text_ref}.yaml"
    if not isinstance(data, dict):
        raise UserError(f"{label}: expected a mapping with nodes/namespaces/deployments")
    return _extended(data, label), label


def _packaged(name: str) -> Any:
    """A packaged seed (every rehearsal cluster reads one)."""
    return load_packaged((resources.files("vllm_remedy.sim") / "seeds" / f"{name}.yaml").read_text())


def _extended(data: Obj, label: str) -> Obj:
    """``extends: <packaged seed>``: that seed's keys, each replaced whole by this one's (one level, so a world
    differing in its workloads need not repeat the runbook's nodes)."""
    parent = data.get("extends")
    if parent is None:
        return data
    if not isinstance(parent, str) or parent not in packaged_seeds():
        raise UserError(f"{label}: extends: {parent!r} is not a packaged seed (have: {', '.join(packaged_seeds())})")
    base = _packaged(parent)
    if not isinstance(base, dict) or "extends" in base:
        raise UserError(f"{label}: extends: {parent!r} extends another seed itself (one level only)")
    return {**base, **{k: v for k, v in data.items() if k != "extends"}}


def seed_reality(ref: Obj | str | Path) -> Reality | None:
    """The world's ``reality`` (perturbed | exact) and ``reality-seed`` keys; None when the seed sets neither."""
    seed, label = load_seed(ref)
    if seed.get("reality") is None and seed.get("reality-seed") is None:
        return None
    return parse_reality(seed.get("reality"), seed.get("reality-seed"), label)


def enable_admission(store: Any, seed: Obj, label: str) -> None:
    """``admission: [ExtendedResourceToleration]``: the mutating plugins of the cloud the world copies (``sim up``
    calls it again on restored state, which keeps no functions)."""
    for plugin in admission.plugins(seed.get("admission"), label):
        if plugin not in store.admission:
            store.admission.append(plugin)


def cluster_seeds(seed: Obj) -> dict[str, Obj]:
    """A multi-cluster seed (``clusters: {name: seed}``) split per cluster; a plain seed is "default"."""
    clusters = seed.get("clusters")
    if isinstance(clusters, dict):
        return {str(name): body or {} for name, body in clusters.items()}
    return {"default": seed}


def make_node(entry: Obj, where: str) -> Obj:
    """A Node object from the seed shorthand (name, gpu{product, memoryMiB, count}, labels, taints…)."""
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise UserError(f"{where}.name: required, a node name")
    gpu = entry.get("gpu") or {}
    labels = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
    }
    if entry.get("instanceType"):
        labels["node.kubernetes.io/instance-type"] = str(entry["instanceType"])
    capacity = {"cpu": str(entry.get("cpu", "32")), "memory": str(entry.get("memory", "128Gi")),
                "pods": str(entry.get("pods", "110")), "ephemeral-storage": "200Gi"}
    if gpu:
        count = int(gpu.get("count", 1))
        labels.update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": str(gpu["product"]),
                       "nvidia.com/gpu.count": str(count)})
        if gpu.get("memoryMiB"):
            labels["nvidia.com/gpu.memory"] = str(gpu["memoryMiB"])
        if gpu.get("family"):
            labels["nvidia.com/gpu.family"] = str(gpu["family"])
        capacity["nvidia.com/gpu"] = str(count)
    labels.update({str(k): str(v) for k, v in (entry.get("labels") or {}).items()})
    index = sum(map(ord, name)) % 200 + 10
    stamp = "2025-01-01T00:00:00Z"
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"taints": copy.deepcopy(entry["taints"])} if entry.get("taints") else {},
        "status": {
            "capacity": dict(capacity), "allocatable": dict(capacity),
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": m, "lastHeartbeatTime": stamp,
                 "lastTransitionTime": stamp} for t, s, r, m in _NODE_CONDITIONS],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250}"},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                         "containerRuntimeVersion": "containerd://1.7.24", "operatingSystem": "linux",
                         "architecture": "amd64", "osImage": "Ubuntu 22.04.5 LTS", "kernelVersion": "6.8.0-1021"},
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [],  # a seeded Deployment's images are added where its revisions could have run
        },
    }


def set_path(obj: Obj, path: str, value: Any, where: str) -> None:
    """Set ``a.b[name].c`` (``[name]`` picks a list item by its ``name``, ``[0]`` by index); None deletes."""
    steps = [(m.group(1), m.group(2)) for m in _STEP.finditer(path)]
    if not steps:
        raise UserError(f"{where}: empty path")
    cursor: Any = obj
    for i, (key, pick) in enumerate(steps):
        last = i == len(steps) - 1
        if key is not None:
            if not isinstance(cursor, dict):
                raise UserError(f"{where}: {path!r}: {key!r} is not inside a mapping")
            if last:
                if value is None:
                    cursor.pop(key, None)
                else:
                    cursor[key] = copy.deepcopy(value)
                return
            nxt = steps[i + 1]
            cursor = cursor.setdefault(key, [] if nxt[1] is not None else {})
        else:
            if not isinstance(cursor, list):
                raise UserError(f"{where}: {path!r}: [{pick}] is not inside a list")
            if pick.isdigit():
                index = int(pick)
                if index >= len(cursor):
                    raise UserError(f"{where}: {path!r}: index {index} out of range")
            else:
                found = [j for j, item in enumerate(cursor) if isinstance(item, dict) and item.get("name") == pick]
                if not found:
                    raise UserError(f"{where}: {path!r}: no list item named {pick!r}")
                index = found[0]
            if last:
                cursor[index] = copy.deepcopy(value)
                return
            cursor = cursor[index]


def apply_seed(cluster: SeedTarget, ref: Obj | str | Path, *, wait: bool = True, timeout: float = 30.0) -> None:
    """The body of ``Cluster.apply_seed``. Objects and Deployments that already exist are kept, so
    re-applying a seed over restored state is harmless; bad seeds raise UserError naming the key."""
    seed, label = load_seed(ref)
    store = cluster.store
    enable_admission(store, seed, label)
    install_crds(cluster, seed.get("crds"), f"{label}: crds")
    for i, entry in enumerate(seed.get("nodes") or []):
        if not isinstance(entry, dict):
            raise UserError(f"{label}: nodes[{i}]: expected a mapping")
        _create(store, "nodes", make_node(entry, f"{label}: nodes[{i}]"))
    for ns in seed.get("namespaces") or []:
        _create(store, "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": str(ns), "labels": {"kubernetes.io/metadata.name": str(ns)}},
                                      "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    for i, obj in enumerate(seed.get("objects") or []):
        if not isinstance(obj, dict) or "resource" not in obj or "object" not in obj:
            raise UserError(f"{label}: objects[{i}]: expected {{resource: <plural[.group]>, object: <manifest>}}")
        manifest = copy.deepcopy(obj["object"])
        try:  # as the API server defaults a created object (a rollback writes back what it stored)
            default_and_validate(str(obj["resource"]), manifest)
        except ApiError as err:
            raise UserError(f"{label}: objects[{i}]: {err}") from None
        _create(store, str(obj["resource"]), manifest)
    for i, entry in enumerate(seed.get("models") or []):
        ship_model(entry, f"{label}: models[{i}]")
    if seed.get("dcgm-exporter"):
        _exporters(store)
    for i, entry in enumerate(seed.get("deployments") or []):
        _roll_history(cluster, entry, f"{label}: deployments[{i}]", wait, timeout)


#: What a seed's ``crds:`` may install: a word for a product's CRDs, or one resource key.
CRD_SETS = {"kserve": ("inferenceservices.serving.kserve.io", "servingruntimes.serving.kserve.io",
                       "clusterservingruntimes.serving.kserve.io"),
            "lws": ("leaderworkersets.leaderworkerset.x-k8s.io",), "karpenter": ("nodepools.karpenter.sh",)}


def install_crds(cluster: SeedTarget, names: Any, where: str) -> None:
    """``crds: [kserve]``: store those CustomResourceDefinitions, so their kinds are served from now on (a cluster
    without them answers 404, as one where the product was never installed)."""
    if names is None:
        return
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise UserError(f"{where}: expected a list of names ({', '.join(CRD_SETS)} or <plural>.<group>)")
    known = {r.key: r for r in api_resources.RESOURCES if r.needs_crd}
    for name in names:
        keys = CRD_SETS.get(name, (name,))
        if not set(keys) <= set(known):
            raise UserError(f"{where}: unknown CRD {name!r}; expected one of {', '.join(sorted({*CRD_SETS, *known}))}")
        for key in keys:
            _create(cluster.store, api_resources.CRDS, api_resources.crd_object(known[key]))


def ship_model(entry: Any, where: str) -> None:
    """``models: [{id, revision?, config}]``: a model's config.json the world's pods find as vLLM would find it on
    the Hub, so a world can serve a model outside the catalog without any network."""
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or "config" not in entry:
        raise UserError(f"{where}: expected {{id: <org/name>, config: <config.json mapping>, revision: optional}}")
    revision = str(entry["revision"]) if entry.get("revision") is not None else None
    spec = hub.spec_from_config(entry["config"], entry["id"], f"{where}: config")
    model_lookup.ship(entry["id"], revision, spec)  # the pods' own, apart from what the Hub gives
    resolved.learn(entry["id"], revision, spec)


def _exporters(store: Any) -> None:
    """``dcgm-exporter: true``: the GPU operator's namespace and its exporter pod on every GPU node (the pods its
    DaemonSet would have placed)."""
    _create(store, "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": EXPORTER_NAMESPACE,
                                               "labels": {"kubernetes.io/metadata.name": EXPORTER_NAMESPACE}},
                                  "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    for node in store.list("nodes")[0]:
        if int(str(((node.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu", 0)) or 0) > 0:
            _create(store, "pods", exporter_pod(node))


def _create(store: Any, resource: str, obj: Obj) -> None:
    try:
        store.create(resource, obj)
    except ApiError as err:
        if err.code != 409:  # re-applying a seed over restored state is fine
            raise


def _roll_history(cluster: SeedTarget, entry: Any, where: str, wait: bool, timeout: float) -> None:
    """Write the history ReplicaSets directly, then create the Deployment at its last revision.

    A real cluster at revision N holds the older revisions as ReplicaSets scaled to zero; rolling each
    one out again at seed time would cost a model load per revision. So every listed revision but the
    last becomes the ReplicaSet the controller would have left (same builder, owner reference to the
    Deployment's uid, revision ``first-revision + i``, its change-cause), back-dated a few days apart;
    then the Deployment is created with that uid and the controller rolls out the last template as
    revision ``first-revision + len - 1`` and prunes beyond ``revisionHistoryLimit`` as usual.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("manifest"), dict):
        raise UserError(f"{where}.manifest: required, a Deployment manifest")
    meta = entry["manifest"].get("metadata") or {}
    if not meta.get("name") or not meta.get("namespace"):
        raise UserError(f"{where}.manifest.metadata: name and namespace are required")
    ns, name = meta["namespace"], meta["name"]
    if cluster.store.find("deployments.apps", ns, name) is not None:
        return  # already there (restored state): keep its history
    first = entry.get("first-revision", 1)
    if isinstance(first, bool) or not isinstance(first, int) or first < 1:
        raise UserError(f"{where}.first-revision: expected a whole number >= 1, got {first!r}")
    states = _revision_manifests(entry, where)
    uid = str(uuid.uuid4())
    now = cluster.clock.now()
    created_at = now - (len(states) - 1) * HISTORY_SPACING
    history: dict[str, Obj] = {}  # pod-template-hash → ReplicaSet (a listed revision may repeat a template)
    for i, body in enumerate(states[:-1]):
        body["metadata"]["uid"] = uid
        rs = replicaset_for(body, str(first + i), 0)
        stamp = cluster.clock.timestamp(created_at + i * HISTORY_SPACING)
        rs["metadata"]["creationTimestamp"] = stamp
        same = history.get(rs["metadata"]["name"])
        if same is not None:  # reused as the controller reuses it: revision bumped, old number remembered
            set_new_rs_annotations(body, same, str(first + i), exists=True)
        else:
            history[rs["metadata"]["name"]] = rs
    for rs in history.values():
        _create(cluster.store, "replicasets.apps", rs)
    _pulled_where_run(cluster.store, states)
    body = states[-1]
    body["metadata"].update({"uid": uid, "creationTimestamp": cluster.clock.timestamp(created_at)})
    made = cluster.store.create("deployments.apps", body)
    if wait:
        generation = made["metadata"]["generation"]
        if not wait_until(lambda: _settled(cluster, ns, name, generation), timeout):
            raise UserError(f"{where}: deployment {ns}/{name} did not roll out within {timeout:g}s")


def _pulled_where_run(store: Any, states: list[Obj]) -> None:
    """Each seeded revision's images are on the nodes its pods could have run on (the scheduler's own filter),
    as on a cluster that has been running it; a rollout elsewhere (or of a new image) pulls, as it would."""
    held: dict[str, list[str]] = {}
    for node in store.list("nodes")[0]:
        if (node.get("status") or {}).get("images") is None:  # a node that reports none holds every image
            continue
        for state in states:
            pod = {"spec": ((state.get("spec") or {}).get("template") or {}).get("spec") or {}}
            if not node_reasons(pod, node, {}, 0):
                held.setdefault(node["metadata"]["name"], []).extend(
                    str(c["image"]) for c in pod["spec"].get("containers") or [] if c.get("image"))
    for name, images in held.items():
        store.mutate("nodes", "", name, lambda obj, images=images: add_images(obj, images), status=True)


def _revision_manifests(entry: Obj, where: str) -> list[Obj]:
    """The defaulted Deployment manifest at each listed revision (each ``set`` applied on the previous)."""
    manifest = copy.deepcopy(entry["manifest"])
    revisions = entry.get("revisions") or [{}]
    if not isinstance(revisions, list):
        raise UserError(f"{where}.revisions: expected a list")
    states = []
    for r, rev in enumerate(revisions):
        rwhere = f"{where}.revisions[{r}]"
        if not isinstance(rev, dict):
            raise UserError(f"{rwhere}: expected a mapping with change-cause and set")
        for path, value in (rev.get("set") or {}).items():
            set_path(manifest, str(path), value, f"{rwhere}.set")
        if rev.get("change-cause"):
            manifest.setdefault("metadata", {}).setdefault("annotations", {})[CHANGE_CAUSE] = str(rev["change-cause"])
        state = default_deployment(copy.deepcopy(manifest))
        state.setdefault("apiVersion", "apps/v1")
        state.setdefault("kind", "Deployment")
        states.append(state)
    return states


def _settled(cluster: SeedTarget, ns: str, name: str, generation: int) -> bool:
    obj = cluster.store.find("deployments.apps", ns, name)
    if obj is None or (obj.get("status") or {}).get("observedGeneration", 0) < generation:
        return False
    return cluster.rolled_out(ns, name)
