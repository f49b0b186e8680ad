"""Restore's candidates resolved each at its own model: the I/O half of "predicted to fail on the GPU its pods would
get now" for a revision whose ``--model``, ``--revision`` or Hub settings differ from the current template's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.connectors.models import learn_template
from vllm_remedy.operations.util import K8sHost
from vllm_remedy.remedies.restore_models import ModelKeys


def model_keys(ctx: K8sHost, rows: Any) -> ModelKeys:
    """Each revision's model resolved at its own ``--model``, ``--revision`` and environment before restore decides
    (``connectors.models.learn_template``), by revision number: the key its prediction looks it up under. README's
    promise is that a candidate "predicted to fail on the GPU its pods would get now" is skipped; the connector
    resolves only the current template's model, so without this an earlier revision pinned to another revision of the
    model went unpredicted ("no prediction") and was rolled back to. Memoized per model, revision and environment:
    revisions sharing the current one's cost no request, a new revision its first one."""
    out: dict[int, tuple[Any, ...]] = {}
    for row in rows or []:
        number, template = row.get("number"), row.get("template")
        if isinstance(number, int) and isinstance(template, Mapping):
            key = learn_template(ctx.client, ctx.namespace, template, ctx.container, ctx.policy)
            if key is not None:
                out[number] = key
    return out
