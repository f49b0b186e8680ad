"""vLLM's words for the scheduler config's refusal of ``--max-num-batched-tokens`` below ``--max-model-len`` without
chunked prefill (``memory.core.batch_refused``), as the tools print them in an outcome line and a JSON ``refusal``.

The text is ``startup_log.config_refusal.batch_error``'s, the release's exception as Python prints it, so the tools
and a rendered log say the same words; only the figures and the exception's name are kept (pydantic's input dump
from 0.9.1 is noise on one line).
"""

from __future__ import annotations

import re

from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.memory.core import batch_refused
from vllm_remedy.vllm.memory.settings import EngineSettings, resolve
from vllm_remedy.vllm.startup_log.config_refusal import PYDANTIC_SINCE, batch_error
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

_PYDANTIC_INPUT = re.compile(r"\s*\[type=value_error, .*$")


def refusal(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> str | None:
    """The release's exception for a refused batch (``ValueError: max_num_batched_tokens (8192) is smaller than
    max_model_len (16384). ...``; from 0.9.1 ``ValidationError for SchedulerConfig: ...``), None when vLLM takes it."""
    res = resolve(model, gpu, settings)
    if not batch_refused(res):
        return None
    version = parse_version(settings.version) or NEWEST_RELEASE  # an unknown version has the newest rules
    text = batch_error(version, res.mnbt, res.max_model_len)
    if version < PYDANTIC_SINCE:
        return text
    words = next(line for line in text.splitlines() if line.strip().startswith("Value error, "))
    return "ValidationError for SchedulerConfig: " + _PYDANTIC_INPUT.sub("", words.strip()[len("Value error, "):])
