"""VLLM_USE_V2_MODEL_RUNNER: whether V1 runs the model on Model Runner V2 (``runner_v2.runner_v2_by_default`` is the
unset case), release by release.

Read from envs.py and config/vllm.py (``VllmConfig.use_v2_model_runner``) and platforms/interface.py:

- 0.21.0: ``bool(int(os.getenv("VLLM_USE_V2_MODEL_RUNNER", "0")))``: V2 only when set to 1. That release's V2 runner
  is not what the model's V2 terms were read from (0.22 on, ``runner_v2.MRV2_*``), so 1 there cannot be predicted;
  releases before 0.21 were not read for it (0 asks for the V1 runner they run anyway).
- 0.22.0: ``maybe_convert_bool(os.getenv(...))``, None when unset; ``use_v2_model_runner`` returns a set value as it is
  ("if use_v2_model_runner is not None: return use_v2_model_runner"), else the per-model default. So 0 keeps the V1
  runner and 1 takes V2 whatever the model (a feature V2 lacks is then a ValueError, ``_validate_v2_model_runner``:
  those features are not inputs here). 0.23-0.33 are taken to read it as 0.22.0 does (the default's history in
  ``versions`` was read at each; this reading at 0.22.0 only).
- 0.34.0: the V1 runner is gone; ``validate_environ`` (platforms/interface.py@0.34.0) raises ValueError for any value
  but "1" ("VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported: Model Runner V1 has been removed. Unset this
  variable.") and warns that 1 is redundant.

A value ``int()`` refuses raises ValueError where the variable is read with ``bool(int(...))`` (0.21-0.33).
"""

from __future__ import annotations

from vllm_remedy.vllm.runner_v2 import MRV2_QWEN3_SINCE
from vllm_remedy.vllm.versions import VersionRules

ENV = "VLLM_USE_V2_MODEL_RUNNER"
INPUT = "v2-model-runner-env"  # the variable's text in vLLM's process (absent: unset)
UNREADABLE = "v2-model-runner-env-unreadable"  # why the pod's value cannot be read
READ_SINCE = (0, 21, 0)  # the first release read for it
SET_OVERRIDES_SINCE = MRV2_QWEN3_SINCE  # 0.22.0: a set value overrides the per-model default
V1_RUNNER_REMOVED_SINCE = (0, 34, 0)  # anything but 1 is refused


def _decide(r: VersionRules, default: bool, value: str) -> tuple[bool, str | None]:
    at, v = f"vLLM {r.display}", r.version
    if v >= V1_RUNNER_REMOVED_SINCE:
        if value == "1":
            return True, None
        return default, (f"cannot predict {ENV}={value}: {at} has no V1 model runner and refuses any value but 1 "
                         "(ValueError, validate_environ, platforms/interface.py@0.34.0); unset it")
    try:
        number = int(value)
    except ValueError:
        return default, (f"cannot predict {ENV}={value!r}: {at} reads it as bool(int(value)) (vllm/envs.py), which "
                         "raises ValueError on this text")
    if number == 0:
        return False, None
    if v < READ_SINCE:
        return default, f"cannot predict {ENV}={value}: {at} was not read for this variable (read from 0.21.0)"
    if v < SET_OVERRIDES_SINCE:
        return default, (f"cannot predict {ENV}={value}: on {at} it runs Model Runner V2, whose memory terms were read "
                         "from 0.22 on, not for this release")
    return True, None


def runner_v2(r: VersionRules, default: bool, value: str | None,
              unreadable: str | None = None) -> tuple[bool, str | None]:
    """Whether the model runs on Model Runner V2 with the variable at ``value`` (None: unset; ``default``: this
    release's choice for the model, ``runner_v2.runner_v2_by_default``), and why the start cannot be predicted when
    the value makes it so (refused, a runner not modelled, or unreadable where 0 and 1 differ)."""
    if r.engine != "V1" or (value is None and unreadable is None):
        return default, None
    if unreadable is not None:
        off, on = _decide(r, default, "0"), _decide(r, default, "1")
        if off != on:
            return default, (f"cannot predict {ENV}: which model runner vLLM {r.display} uses (or whether it refuses "
                             f"the start) depends on it, and its value cannot be read: {unreadable}")
        return off
    return _decide(r, default, value)
