"""Container fields whose shape the Kubernetes API server refuses: no pod ever runs from such a manifest.

``command`` and ``args`` are ``[]string``: YAML writes ``8192`` or ``true`` unquoted as a number or a boolean, and a
single string (``args: "--model m --max-model-len 16384"``) is not a list at all; the API server refuses the whole
object (400), whatever the container runs. The same holds for ``env`` (``pod_env.invalid``) and for any container of
the pod, sidecars and initContainers included. Checking what such a manifest *would* run would judge a pod that never
exists, so callers report the refusal instead, naming the container and the position.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm import pod_env
from vllm_remedy.vllm.cmdline.argv_shape import argv_problem

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def container_problem(container: Mapping[str, Any]) -> str | None:
    """Why Kubernetes refuses this container (argv or env), one phrase; None when its shape is valid."""
    return argv_problem(container) or pod_env.invalid(container)


def pod_problem(spec: Mapping[str, Any]) -> str | None:
    """Why Kubernetes refuses any container of the pod spec, one line naming the container; None when none."""
    for key in _CONTAINER_LISTS:
        for c in spec.get(key) or []:
            if isinstance(c, Mapping) and (why := container_problem(c)) is not None:
                return f"container {c.get('name', '?')}: {why}"
    return None
