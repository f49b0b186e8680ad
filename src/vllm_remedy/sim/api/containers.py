"""What kube-apiserver's pod-spec validation refuses in a container's name and image, in its words.

Transcribed from pkg/apis/core/validation/validation.go: ``validateContainers`` runs ``validateContainerCommon`` on
each container (an empty ``name`` is ``field.Required``, else ``ValidateDNS1123Label``; an empty ``image`` is
``field.Required(path.Child("image"), "")``), then refuses a name already used (``field.Duplicate``);
``validateInitContainers`` does the same for init containers, a name of a regular container counting as used.
``ValidatePodSpec`` checks containers before init containers, and a pod template (Deployment, ReplicaSet,
StatefulSet) is validated as a pod spec under ``spec.template.spec``. So the classic JSON merge patch that replaces the
``containers`` list with ``[{"name": "vllm", "args": [...]}]`` (RFC 7386: lists are replaced whole) is refused with
``spec.template.spec.containers[0].image: Required value`` instead of running an image-less container.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy.sim.api.config_validation import FieldError

LABEL_MAX = 63  # DNS1123LabelMaxLength
_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL = re.compile(_LABEL_FMT)
LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 f"validation is '{_LABEL_FMT}')")


def label_errors(name: str) -> list[str]:
    """``IsDNS1123Label``: why ``name`` is no lowercase RFC 1123 label (empty: it is one)."""
    errs = []
    if len(name) > LABEL_MAX:
        errs.append(f"must be no more than {LABEL_MAX} characters")
    if not _LABEL.fullmatch(name):
        errs.append(LABEL_MESSAGE)
    return errs


def _common(container: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateContainerCommon``'s name and image rules for one container at ``path``."""
    name = str(container.get("name") or "")
    errs = ([FieldError("Required", f"{path}.name")] if not name
            else [FieldError("Invalid", f"{path}.name", msg, name) for msg in label_errors(name)])
    if not str(container.get("image") or ""):
        errs.append(FieldError("Required", f"{path}.image"))
    return errs


def errors(spec: Any, path: str) -> list[FieldError]:
    """The container errors of the pod spec ``spec`` found at ``path`` (``spec``, ``spec.template.spec``); an
    absent or empty ``containers`` list is the caller's (it already answers ``Required value``)."""
    if not isinstance(spec, Mapping):
        return []
    out: list[FieldError] = []
    used: set[str] = set()
    for key in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(key) or []):
            if not isinstance(container, Mapping):
                continue
            where = f"{path}.{key}[{i}]"
            out += _common(container, where)
            name = str(container.get("name") or "")
            if name and name in used:
                out.append(FieldError("Duplicate", f"{where}.name", value=name))
            used.add(name)
    return out
