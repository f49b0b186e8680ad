"""What one pod's engine layout does to the drift checks of a workload that is not a multi-node group (pure).

Two things the memory prediction (``remedies.predict.predict_template``) does not say for a single pod: vLLM stops
before sizing any memory when the engine spans more GPUs than the container gets (``vllm.parallel.pod_shortfall``:
the rehearsal pod's crash, as ``check`` reports it), and pipeline stages are not modelled (``vllm.memory.pipeline``):
``predict_template`` sizes them as tensor-parallel ranks, a number ``check`` does not print, so drift says unknown too.
"""

from __future__ import annotations

from vllm_remedy.errors import UserError
from vllm_remedy.remedies.predict import Prediction, before_world_size
from vllm_remedy.vllm.cmdline import ServerCommand
from vllm_remedy.vllm.memory.pipeline import pipeline_unmodelled
from vllm_remedy.vllm.outcomes import sized
from vllm_remedy.vllm.parallel import parallel_sizes, pod_shortfall
from vllm_remedy.vllm.versions import version_from_image


def layout_verdicts(server: ServerCommand, prediction: Prediction, resource: str) -> dict[str, tuple[str, str]]:
    """The checks to replace, by name, with (status, detail): the prediction drift when the pod cannot hold its engine,
    unless vLLM refuses the start earlier (``predict.before_world_size``: the prediction says that refusal, the words
    the pod's log ends with, and the world size as what refuses next); the prediction and concurrency unknown when its
    pipeline stages are not sized (a config-time refusal, reached before any stage exists, stays as predicted);
    nothing otherwise."""
    short = pod_shortfall(server.flags, server.container, server.image, resource)
    if short is not None and before_world_size(prediction, version_from_image(server.image)):
        return {"prediction": ("drift", f"{_failed(prediction)}; then, that fixed: {short}")}
    if short is not None:
        return {"prediction": ("drift", f"predicted to fail: {short}")}
    try:
        why = pipeline_unmodelled(parallel_sizes(server.flags)[1])
    except UserError:  # an unreadable size: the prediction already says why
        return {}
    if why is None or (prediction.estimate is not None and not sized(prediction.estimate.outcome)):
        return {}
    return {"prediction": ("unknown", why), "concurrency": ("unknown", why)}


def _failed(prediction: Prediction) -> str:
    """The earlier refusal as the prediction check words it (``drift.checks.check_prediction``)."""
    if prediction.estimate is None and prediction.refused:  # argparse refuses the start as written (exit 2)
        return f"predicted to fail: vLLM refuses the start at argument parsing (exit 2): {prediction.note}"
    if prediction.estimate is None:  # a literal the config classes refuse (``config_refused``): the note quotes it
        return f"predicted to fail: {prediction.outcome}: {prediction.note}"
    return f"predicted to fail: {prediction.line()}"
