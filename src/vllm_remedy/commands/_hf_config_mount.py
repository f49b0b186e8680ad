"""A manifest's ``--hf-config-path`` naming a directory in the pod: read when a ConfigMap checked with it is mounted.

vLLM reads ``<path>/config.json`` from the container's filesystem (``file_or_path_exists``: ``Path(model).exists()``,
then the file, transformers_utils/config.py@0.8.5, @0.11.0; repo_utils.py@0.19.0, @0.34.0), which this tool cannot
see: that is "cannot predict" (``hub``: a local path in the pod). A ConfigMap among the files checked whose key a
volume mount puts at ``<path>/config.json`` is that file, read as vLLM's ``--config`` YAML is read from a mounted
ConfigMap (``manifest_flags_file``: same namespace, by name, ``items`` and ``subPath`` honoured).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy import hub
from vllm_remedy.vllm import manifest_flags_file
from vllm_remedy.vllm.cmdline import ServerCommand
from vllm_remedy.vllm.hf_overrides import PATH_FLAG


def fallback(server: ServerCommand, spec: Mapping[str, Any],
             maps: Mapping[str, Mapping[str, str]] | None) -> hub.Fallback | None:
    """(where, reader) of ``--hf-config-path``'s config.json when a mounted ConfigMap among ``maps`` holds it, for
    ``hub`` to read when the pod's path itself cannot be; None otherwise (no flag, a relative path, not mounted)."""
    path = str(server.flags.get(PATH_FLAG) or "").strip().rstrip("/")
    if not path.startswith("/") or not maps:
        return None
    file = f"{path}/{hub.CONFIG}"
    text = manifest_flags_file.file_text(server.container, spec, file, maps)  # the mount reading --config uses
    if text is None:
        return None
    where = f"--{PATH_FLAG} {path}: {file} from a ConfigMap mounted there (in the files checked)"
    return where, lambda: hub.config_from_json(text, where)
