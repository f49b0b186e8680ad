"""The vLLM workloads of manifest files: every vLLM container of every pod spec (a LeaderWorkerSet's leader for its
group, a KServe predictor through its runtime), as ``check`` reads them before judging any (pure).

Apart from the rules (``manifest_check``) because this is the reading of the files alone: which objects and
containers run vLLM, and the served model as Kubernetes hands it over.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.lws_history import leader_template, lwt_of
from vllm_remedy.vllm import kserve, manifest
from vllm_remedy.vllm.cmdline import NoServerError, ServerCommand, find_server


@dataclass(frozen=True)
class Workload:
    """One vLLM container of one pod spec in a file; ``problem`` says why its command could not be read."""

    source: str
    kind: str
    namespace: str
    name: str
    path: str
    container: str
    spec: Mapping[str, Any] = field(repr=False)
    metadata: Mapping[str, Any] = field(repr=False)
    server: ServerCommand | None = field(repr=False, default=None)
    problem: str | None = None
    group: Mapping[str, Any] | None = field(repr=False, default=None)  # a LeaderWorkerSet's leaderWorkerTemplate
    # The ConfigMaps among the manifests checked with it (``pod_env.config_maps``): env read from them is known.
    config_maps: Mapping[str, Mapping[str, str]] = field(repr=False, default_factory=dict)

    @property
    def object(self) -> str:
        """``Deployment/llm/llama-8b``: kind, namespace, name, as CI reports name a test case."""
        return f"{self.kind}/{self.namespace}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.source, "kind": self.kind, "namespace": self.namespace, "name": self.name,
                "path": self.path, "container": self.container}


def _objects(doc: Any) -> Iterator[Any]:
    """A document's objects: a ``List`` (``kubectl get -o yaml``, ``kind: DeploymentList``) gives its items."""
    items = doc.get("items") if isinstance(doc, dict) else None
    if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and isinstance(items, list):
        for item in items:
            yield from _objects(item)
    else:
        yield doc


def _container_names(spec: Mapping[str, Any]) -> list[str]:
    return [str(c.get("name", "")) for key in ("containers", "initContainers")
            for c in spec.get(key) or [] if isinstance(c, Mapping)]


def workloads(docs: list[Any], source: str, namespace: str = "default") -> list[Workload]:
    """Every vLLM container in ``docs`` (namespace-less objects get ``namespace``, as kubectl apply would)."""
    out: list[Workload] = []
    for doc in (o for d in docs for o in _objects(d)):
        meta = doc.get("metadata") if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict) else {}
        kind = str(doc.get("kind") or "PodSpec") if isinstance(doc, dict) else "document"
        where = (source, kind, str(meta.get("namespace") or namespace), str(meta.get("name") or "-"))
        group = lwt_of(doc) if kind == "LeaderWorkerSet" and isinstance(doc, dict) else None
        if group is not None:  # one engine: the leader's server, the workers' flags compared with it
            key = "leaderTemplate" if group.get("leaderTemplate") else "workerTemplate"
            pods = [(f"spec.leaderWorkerTemplate.{key}.spec", dict(leader_template(group).get("spec") or {}))]
        else:
            pods = list(manifest.pod_specs(doc) or kserve.manifest_pod_specs(doc, docs))
        for path, spec in pods:
            for name in _container_names(spec):
                try:
                    server: ServerCommand | None = find_server(spec, name)
                    problem = None
                except NoServerError:
                    continue
                except UserError as exc:  # vLLM whose flags are not in argv, or a script we cannot read
                    server, problem = None, str(exc)
                out.append(Workload(*where, path or "(pod spec)", name, spec, meta, server, problem, group))
    return out


def model_id(server: ServerCommand) -> str | None:
    """The served model, ``$(MODEL_ID)`` resolved from the container's literal env (Kubernetes expands it)."""
    match = re.fullmatch(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", server.model or "")
    if not match:
        return server.model
    for env in server.container.get("env") or []:
        if isinstance(env, dict) and env.get("name") == match.group(1) and isinstance(env.get("value"), str):
            return str(env["value"])
    return server.model
