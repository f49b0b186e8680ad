"""Small readings of the pod's argv for ``launch``: a flag's value as "non-default args" prints it, a flag written
without the value it takes, and ``--max-model-len -1`` on 0.11 (no auto-fit yet)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm.cmdline.flags import Kind
from vllm_remedy.vllm.cmdline.parse import Option
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version


def typed(value: str | None, kind: type[int] | type[float]) -> Any:
    """A flag's value as vLLM's arguments line prints it, or None when unset or not a plain number."""
    try:
        return kind(value) if value is not None else None
    except ValueError:
        return None


def minus_one_without_auto_fit(flags: Mapping[str, str], version: str) -> bool:
    """``--max-model-len -1`` on 0.11: its parser takes it (``human_readable_int`` ends in ``int("-1")``), ModelConfig
    keeps it (``max_model_len: SkipValidation[int]``; ``_get_and_verify_max_len`` returns a length that is neither None
    nor above the model's unchanged, config/model.py@0.11.0), the scheduler only warns, and ``GPUModelRunner.__init__``
    fails on ``torch.empty((self.max_model_len, 1), ...)`` (v1/worker/gpu_model_runner.py@0.11.0, from
    ``Worker.init_device``). Auto-fit is 0.14.0's; the other releases before it were not read for -1."""
    release = parse_version(version) or NEWEST_RELEASE
    return release[:2] == (0, 11) and str(flags.get("max-model-len", "")).strip() == "-1"


def without_value(opt: Option) -> bool:
    """A flag that takes a value (one, or one or more) written without any: argparse's ``expected one argument``."""
    flag = opt.flag
    return (not opt.values and flag.attached is None and not flag.negated and "." not in flag.name
            and flag.kind in (Kind.VALUE, Kind.MULTI))
