"""Predictions against what happened: for every pod the fault and the remedies started, the memory
model's verdict on the card it landed on, next to how that pod actually ended and the KV cache its log reports
(pure). On the rehearsal cluster the two differ by the model's measured error (``sim.vllm_pod.reality``).

A prediction names the failure class the classifier would: a start that passes every vLLM check but whose CUDA
graphs do not fit after the KV cache (``Estimate.graph_capture_oom``) is ``cudagraph_capture_oom``, never ``fits``;
one whose budget or flag-sized cache alone overruns the card (``remedies.predict.failed_prediction``, the rule
``check`` and drift use) dies allocating the KV cache, ``kv_cache_allocation_oom`` as the classifier names it; and a
release newer than the newest modelled says its rules are extrapolated, in the row's detail and its JSON
(``vllm_version`` as tagged, ``vllm_version_label``, ``rules``), as every other output does, and each option it may
have added that no release read had is "not judged" (the detail, and ``not_judged`` in JSON), in check's words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.gameday.compliance import node_product
from vllm_remedy.gameday.timeline import ACTION, FAULT, Classified, Mark
from vllm_remedy.remedies.predict import failed_prediction, predict_template, unjudged
from vllm_remedy.sim.vllm_pod.keys import GPU_USED_GIB
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.failures import FAILURES
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.versions import rules, version_from_image

#: Failures the memory model's startup prediction does not speak of: those under load (once long prompts
#: arrive) and the kernel's OOM killer (host memory, not the GPU).
RUN_TIME = {c.name for c in FAILURES.values() if c.phase == "load" or c.host_memory}


def predict_pod(spec: Mapping[str, Any], node: Mapping[str, Any], container: str | None) -> tuple[str, str]:
    """(outcome, one-line detail) the memory model predicts for this pod spec on the card it landed on."""
    outcome, detail, _ = predict_pod_kv(spec, node, container)
    return outcome, detail


def predict_pod_kv(spec: Mapping[str, Any], node: Mapping[str, Any],
                   container: str | None) -> tuple[str, str, tuple[int, float] | None]:
    """``predict_pod`` plus the KV cache predicted, (tokens, GiB); None when the model could not judge the pod."""
    product = node_product(node)
    if not product:
        return "unknown", "the node names no GPU product", None
    other = ((node.get("metadata") or {}).get("annotations") or {}).get(GPU_USED_GIB)
    got = predict_template({"spec": spec}, container, gpu=str(product),
                           other_process_gib=float(other) if other else None)
    est = got.estimate
    if est is None:
        return "unknown", "; ".join(n for n in (got.note, *got.unjudged) if n), None
    outcome = est.outcome.value
    if not est.fits:
        detail = f"needs more than the {est.total_gib:.1f} GiB card allows"
    elif est.graph_capture_oom:  # vLLM's checks pass, the KV cache is sized, the graphs do not fit
        outcome = Failure.CUDAGRAPH_CAPTURE_OOM.value
        detail = (f"{est.kv_cache_tokens:,} KV tokens sized, then peak {est.peak_gib:.2f} GiB with the CUDA graphs "
                  f"exceeds the {est.total_gib:.2f} GiB card")
    elif failed_prediction(got) is not None:
        # The budget alone overruns the card (other processes an "increase" budget does not subtract): PyTorch's
        # OOM comes while the KV cache is allocated, as with a flag-sized cache larger than the card leaves.
        outcome = Failure.KV_CACHE_ALLOCATION_OOM.value
        detail = (f"peak {est.peak_gib:.2f} GiB exceeds the {est.total_gib:.2f} GiB card before any CUDA graph: "
                  f"a CUDA OOM while the KV cache is allocated")
    else:
        detail = f"{est.kv_cache_tokens:,} KV tokens, {est.max_concurrency:.2f}x at {est.max_model_len}"
    # e.g. "vLLM 0.35.0: rules extrapolated from 0.34", an option it may have added "not judged": never printed as if
    # modelled
    detail = "; ".join((detail, *(n for n in (got.rules, *got.unjudged) if n)))
    return outcome, detail, (est.kv_cache_tokens, est.kv_cache_gib)


def step_of(t: float, marks: Sequence[Mark]) -> str:
    """The game step a pod first seen at cluster time ``t`` belongs to: the fault or the deploy run before it."""
    label = "before the fault"
    for m in sorted(marks, key=lambda m: m.t):
        if m.kind in (FAULT, ACTION) and m.t <= t:
            label = "fault" if m.kind == FAULT else m.label.removeprefix("run ")
    return label


def kv_figure(tokens: int | None, gib: float | None = None) -> str:
    """A KV cache as the report shows it: tokens and GiB, either alone when only it is known (a crash log of some
    releases gives only GiB), "—" when neither is."""
    parts = [f"{tokens:,} tokens" if tokens else "", f"{gib:.2f} GiB" if gib is not None else ""]
    return " / ".join(p for p in parts if p) or "—"


def compare(pods_seen: Mapping[str, Mapping[str, Any]], nodes: Mapping[str, Mapping[str, Any]],
            classified: Sequence[Classified], container: str | None,
            marks: Sequence[Mark] = ()) -> list[dict[str, Any]]:
    """One row per pod: its step, where it ran, the prediction, what happened, the KV cache predicted against the
    one its log reports (the rehearsal's reality, or the real card's), and whether they agree."""
    failures: dict[str, str] = {}
    for c in classified:
        failures.setdefault(c.pod, c.failure)
    rows = []
    for name, seen in pods_seen.items():
        node = nodes.get(seen["node"]) or {}
        predicted, detail, judged = predict_pod_kv(seen["spec"], node, container)
        predicted_kv = judged or (None, None)
        actual = seen.get("actual") or {}
        happened = failures.get(name) or ("ready" if seen.get("ready") else "not ready yet")
        expected = "ready" if predicted == "fits" else predicted
        # "unknown" is both "cannot judge" (no estimate) and a predicted CUDA OOM the classifier places in no phase
        if (predicted == "unknown" and judged is None) or happened == "not ready yet":
            agree = "n/a"
        elif happened in RUN_TIME and predicted == "fits":
            agree = "n/a (run time)"  # it did start as predicted; the model speaks of startup only
        else:
            agree = "yes" if happened == expected else "no"
        try:
            server = find_server(dict(seen["spec"]), container)
            flags = " ".join(f"--{k}" if v == "true" else f"--{k} {v}" for k, v in sorted(server.flags.items()))
            image = server.image.rsplit(":", 1)[-1]
            tagged = version_from_image(server.image)
            version = rules(tagged)
            label, provenance, said = version.label, version.provenance, list(unjudged(server))
        except UserError:
            flags, image, tagged, label, provenance, said = "", "", None, "", "", []
        rows.append({"pod": name, "step": seen.get("step") or step_of(float(seen.get("t", 0.0)), marks),
                     "node": f"{seen['node']} ({node_product(node) or '?'})", "image": image,
                     "vllm_version": tagged, "vllm_version_label": label, "rules": provenance, "not_judged": said,
                     "flags": flags, "predicted": predicted, "prediction": detail, "happened": happened,
                     "agree": agree, "predicted_kv_tokens": predicted_kv[0], "predicted_kv_gib": predicted_kv[1],
                     "actual_kv_tokens": actual.get("kv_tokens"), "actual_kv_gib": actual.get("kv_gib")})
    return rows
