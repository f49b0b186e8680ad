"""The model a host's vLLM serves, resolved once at connect so every prediction of the deploy can use it.

A Deployment cannot pass ``--model-config``; its model is resolved here the way ``hub`` resolves any model
(catalog, Hugging Face cache, the Hub at the Deployment's ``--revision``), with the policy's ``model_config`` —
a file beside the policy or a ConfigMap read through the host's own client — as the last resort. A model that
resolves nowhere is not a connect failure: the deploy goes on, every prediction says "no prediction: <why>",
and what needs no prediction (a rollback by evidence, a report) still happens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_remedy import hub
from vllm_remedy.connectors import cluster_maps
from vllm_remedy.errors import UserError
from vllm_remedy.hub import pod as hub_pod
from vllm_remedy.hub import quant_file
from vllm_remedy.hub.policy_copy import PolicyCopy
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.policy import Policy
from vllm_remedy.vllm import hf_overrides
from vllm_remedy.vllm.cmdline import ServerCommand, find_server

if TYPE_CHECKING:  # annotations only: vllm-remedy check reads policy_config offline without the kubernetes package
    from vllm_remedy.kube.client import KubeClient


def learn_model(client: KubeClient, namespace: str, server: ServerCommand, policy: Policy | None
                ) -> tuple[str | None, tuple[Any, ...]]:
    """Resolve ``server``'s model for this run: (None when it resolved, else the one-line reason; the key its answer
    is kept under, ``hub.answer_key``, which the host's predictions look it up by). A command that names no model
    (vLLM may take it from a ``--config`` file this connector does not read) resolves nothing: a missing id is never
    asked of the Hub."""
    fallback = policy_config(client, namespace, policy) if policy is not None else None
    # the pod's HF_TOKEN, not this machine's: a gated model the pod has no token for is vLLM's 401 (hub.pod)
    maps = cluster_maps.read(client, namespace, server.container)  # its HF_ENDPOINT / offline switch from ConfigMaps
    env = hub_pod.sent(hub_pod.from_manifest(server.container, maps), server)  # its --hf-token where sent
    key = hub.answer_key(env, fallback)
    source = hf_overrides.config_source(server.flags, server.model)  # --hf-config-path: the config vLLM reads
    if not source:
        return "the vLLM command names no model", key
    return hub.learn(str(source), server.flags.get("revision"), fallback, env), key


def learn_template(client: KubeClient, namespace: str, template: Mapping[str, Any], container: str | None,
                   policy: Policy | None) -> tuple[Any, ...] | None:
    """Resolve the model of another pod template of the workload — an earlier revision restore may roll back to —
    at its own ``--model``, ``--revision`` and environment, as vLLM would load it if that revision ran now; the key
    its answer is kept under (None: no vLLM server in it). The connector resolved only the current template's: an
    earlier revision naming another revision (or model) would otherwise go unpredicted. Resolutions are memoized
    (``hub.resolve``), so a revision sharing the current one's model costs no request and a new one costs its
    files' first request."""
    try:
        server = find_server(dict(template.get("spec") or {}), container)
    except UserError:
        return None
    return learn_model(client, namespace, server, policy)[1]


def policy_config(client: KubeClient | None, namespace: str, policy: Policy,
                  maps: Mapping[str, Mapping[str, str]] | None = None) -> hub.Fallback | None:
    """The policy's ``model_config`` as a reader (called only when the Hugging Face sources fail), for the model it
    is of only (``hub.policy_copy``: ``model_config.model``, else ``target.models``, else its ``_name_or_path``; any
    local path model). Files checked without a cluster (``check``, ``plan -f``) carry their ConfigMaps in ``maps``
    (``pod_env.config_maps``: the namespace's, by name), read first, as ``helm template | vllm-remedy check -f -``
    renders the ConfigMap beside the Deployment; without them or a client a ConfigMap cannot be read, which is the
    reason given."""
    source = policy.config_source
    # the models it is of (``hub.policy_copy``): model_config.model, else the models the policy targets
    models = (source.model,) if source.model else tuple(policy.target.models)
    if source.config_map and maps is not None and source.config_map in maps:
        name, key = source.config_map, source.key
        where = f"policy {policy.source} model_config: ConfigMap {namespace}/{name} key {key} (in the files checked)"
        return where, PolicyCopy(lambda: _from_map(maps[name], key, where), models)
    if source.path:
        base = Path(policy.source).parent if policy.source and not policy.source.startswith("<") else Path()
        path = base / source.path
        where = f"policy {policy.source} model_config.path {path}"
        return where, PolicyCopy(lambda: _file(path, where), models)
    if source.config_map:
        where = f"policy {policy.source} model_config: ConfigMap {namespace}/{source.config_map} key {source.key}"
        return where, PolicyCopy(lambda: _config_map(client, namespace, source.config_map or "", source.key, where),
                                 models)
    return None


def _file(path: Path, where: str) -> Mapping[str, Any]:
    """The file, with ModelOpt's ``hf_quant_config.json`` beside it read as vLLM reads the pod's directory
    (``hub.quant_file``; from 0.10.1, per release as for a Hub model): the same answer as ``--model-config``."""
    config = _read_json(hub.read_file(path, where), where)  # a regular file only: a FIFO or a device would block
    beside = f"{where} (its {quant_file.NAME})"
    return quant_file.beside(config, path.parent, lambda text, _: _read_json(text, beside),
                             lambda p: hub.read_file(p, beside).decode("utf-8", errors="replace"))


def _from_map(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """The ConfigMap's ``key``, with ModelOpt's ``hf_quant_config.json`` beside it when the map holds one: a ConfigMap
    is a directory to a pod that mounts it, so it is read as ``model_config.path``'s directory is (:func:`_file`)."""
    if key not in data:
        raise UserError(f"{where}: no such key")
    config = _read_json(str(data[key]), where)
    if key == quant_file.NAME or quant_file.NAME not in data or not quant_file.wanted(config):
        return config
    return quant_file.merged(config, _read_json(str(data[quant_file.NAME]), f"{where} (its {quant_file.NAME})"))


def _config_map(client: KubeClient | None, namespace: str, name: str, key: str, where: str) -> Mapping[str, Any]:
    if client is None:
        raise UserError(f"{where}: not read (no cluster: checking files)")
    try:
        data = client.request("GET", client.object_path(namespace, "configmaps", name, group="v1")).get("data") or {}
    except KubeError as exc:
        raise UserError(f"{where}: {exc}") from None
    return _from_map(data, key, where)


def _read_json(text: str | bytes, where: str) -> Mapping[str, Any]:
    if len(text) > hub.MAX_CONFIG_BYTES:
        raise UserError(f"{where}: refused: larger than {hub.MAX_CONFIG_BYTES // 1024 // 1024} MiB")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UserError(f"{where}: not valid JSON ({exc})") from None
