"""Runbook step 5, "OOM under load (server was running)", as a pyinfra operation: cap what one engine step
may take on — the prefill chunk, images per prompt, resident LoRA adapters.

``remedies.load_guard.guard_flags`` decides which caps vLLM would accept; every cap only ever lowers a value.

    from vllm_remedy.operations import load_guard

    load_guard.caps(name="Cap load per policy")
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pyinfra import host, state
from pyinfra.api import FunctionCommand, operation

from vllm_remedy.errors import UserError
from vllm_remedy.kube.history import template_of
from vllm_remedy.operations.util import (
    deployment_object,
    k8s_host,
    keeps_its_plan,
    noop,
    propose,
    refuse,
    server_of,
    show,
)
from vllm_remedy.remedies.load_guard import caps_of, guard_flags
from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.vllm.versions import version_from_image

CAPS = "load-guard"


@operation()
@keeps_its_plan
def caps(max_num_batched_tokens: int | None = None, limit_mm_per_prompt: Mapping[str, int] | None = None,
         max_loras: int | None = None) -> Iterator[FunctionCommand]:
    """
    Cap what one engine step may take on (runbook step 5, OOM under load): values are maxima, never raised.

    + max_num_batched_tokens: at most this ``--max-num-batched-tokens`` (the version's default counts
      when the flag is absent; never below ``--max-model-len`` without chunked prefill)
    + limit_mm_per_prompt: at most these items per modality (multimodal models only), e.g. ``{"image": 2}``
    + max_loras: at most this ``--max-loras`` (only when ``--enable-lora`` is on)

    Each cap left out (None) is the policy's ``load_shedding`` value.

    Only flags that change are written; each skipped cap is explained when ``--diff``/``--dry`` shows it.

    **Example:**

    .. code:: python

        load_guard.caps(name="Cap load per policy")
        load_guard.caps(name="Cap prefill chunks", max_num_batched_tokens=4096)
    """
    ctx = k8s_host(host)
    deployment = deployment_object(host)
    template = template_of(deployment)
    server = server_of(template, ctx.container)
    shed = caps_of(ctx.policy.load_shedding, max_num_batched_tokens, limit_mm_per_prompt, max_loras)
    prediction = predict_template(template, ctx.container)
    try:
        guard = guard_flags(server.flags, shed, model=server.model, version=version_from_image(server.image),
                            gpu=prediction.gpu)
    except UserError as exc:
        yield from refuse(state, host, f"{ctx.where}: {exc}")
        return
    if not guard.set:
        noop(state, host, f"no cap to lower on {ctx.where}: " + ("; ".join(guard.notes) if guard.notes else
                          f"policy {ctx.policy.source} sets no load_shedding caps"))
        return
    if guard.notes:  # why a cap the policy names is not written: already low enough, or vLLM would refuse it
        show(state, host, [f"cap load on {ctx.where}: {note_}" for note_ in guard.notes], topic="caps-skipped")
    yield from propose(state, host, ctx, deployment, guard.set, action=CAPS,
                       reason="OOM under load (step 5): cap per policy", summary="cap load")


