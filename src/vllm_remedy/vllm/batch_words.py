"""vLLM's words for the scheduler config's refusal of ``--max-num-batched-tokens`` below ``--max-model-len`` without
chunked prefill (``memory.core.batch_refused``), as the tools print them in an outcome line and a JSON ``refusal``.

The text is ``startup_log.config_refusal.batch_error``'s, the release's exception as Python prints it, so the tools
and a rendered log say the same words; only the figures and the exception's name are kept (pydantic's input dump
from 0.9.1 is noise on one line). The estimate that decides the refusal (``memory.core``) asks for them, so this
module takes the figures it resolved rather than resolving the start again.
"""

from __future__ import annotations

import re

from vllm_remedy.vllm.startup_log.config_refusal import PYDANTIC_SINCE, batch_error
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

_PYDANTIC_INPUT = re.compile(r"\s*\[type=value_error, .*$")


def words(version: str | None, max_num_batched_tokens: int, max_model_len: int) -> str:
    """The release's exception for a refused batch (``ValueError: max_num_batched_tokens (8192) is smaller than
    max_model_len (16384). ...``; from 0.9.1 ``ValidationError for SchedulerConfig: ...``)."""
    release = parse_version(version) or NEWEST_RELEASE  # an unknown version has the newest rules
    text = batch_error(release, max_num_batched_tokens, max_model_len)
    if release < PYDANTIC_SINCE:
        return text
    said = next(line for line in text.splitlines() if line.strip().startswith("Value error, "))
    return "ValidationError for SchedulerConfig: " + _PYDANTIC_INPUT.sub("", said.strip()[len("Value error, "):])
