"""The shared shape of our facts: one verb command in, one JSON document out, plain data back.

Why plain data (dicts, lists, numbers): ``pyinfra INVENTORY fact ...`` prints facts as JSON, operations
compare them, and remedies take them as input — none of that should depend on our classes. Why
``FactProcessError``: it is the only exception pyinfra handles per host; anything else aborts the run.
"""

from __future__ import annotations

import json
from typing import Any, Generic, TypeVar

from pyinfra.api.exceptions import FactProcessError
from pyinfra.api.facts import FactBase

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import find_server

T = TypeVar("T")


class JsonFact(FactBase[T], Generic[T]):
    """A fact whose connector answer is exactly one JSON document (one line)."""

    abstract = True

    def process(self, output: list[str]) -> T:
        """pyinfra's parse hook: exactly one JSON object, else FactProcessError, which pyinfra reports for this host
        instead of aborting the whole run."""
        if len(output) != 1:
            raise FactProcessError(f"{self.name}: expected one JSON line from the @k8s connector, got {len(output)} "
                                   "(is this host an @k8s host?)")
        try:
            document = json.loads(output[0])
        except ValueError as exc:
            raise FactProcessError(f"{self.name}: the connector's answer is not JSON: {exc}") from exc
        if not isinstance(document, dict):
            raise FactProcessError(f"{self.name}: expected a JSON object, got {type(document).__name__}")
        try:
            return self.build(document)
        except UserError as exc:  # pure helpers reject malformed objects with one line
            raise FactProcessError(f"{self.name}: {exc}") from exc

    def build(self, document: dict[str, Any]) -> T:
        """The connector's document → the fact's plain data; pure, and a UserError here becomes a host's fact error."""
        raise NotImplementedError


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """``spec.template.spec`` of a Deployment or ReplicaSet (``spec`` of a template)."""
    spec = obj.get("spec") or {}
    template = spec.get("template") if "template" in spec else obj
    return dict((template or {}).get("spec") or {})


def server_summary(spec: dict[str, Any], container: str | None) -> dict[str, Any] | None:
    """The vLLM server of a pod spec as plain data, or None when no container runs vLLM."""
    try:
        server = find_server(spec, container)
    except UserError:
        return None
    image = server.image
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2] or None
    return {"container": server.container_name, "image": image, "image_tag": tag, "entrypoint": server.entrypoint,
            "model": server.model, "model_revision": server.flags.get("revision"), "flags": dict(server.flags)}
