"""Which ModelOpt config class vLLM builds for a checkpoint whose method is ModelOpt's, and that class's minimum
capability, release by release (``quant_support`` refuses a card below it in vLLM's words).

``_verify_quantization`` offers the checkpoint's section to every override in order, ModelOpt's last among them:
"modelopt", "modelopt_fp4", from 0.16.0 "modelopt_mxfp8", from 0.17.0 "modelopt_mixed" (config/__init__.py@0.10.1
l.1113-1151, config/model.py@0.16.0, @0.17.0 l.877-922, @0.30.0 l.1271-1325); the first that answers replaces the
method, and ``--quantization`` with it (``self.quantization = quantization_override``). Each override reads the
section only when its ``quant_method`` is "modelopt" (lower-cased; any method starting with "modelopt" from 0.22.0,
``_extract_modelopt_quant_algo``, modelopt.py@0.22.0), and takes ``quantization.quant_algo`` when the section has a
``quantization`` key (nothing when that is no object), else the section's own ``quant_algo``:
- 0.10.0-0.13.x: FP8 for "FP8" in the text as written, NVFP4 for "NVFP4" in it (a top-level text: "FP4" in it
  upper-cased) (modelopt.py@0.10.0 l.98-105, @0.10.1 l.107-117 / l.573-584, @0.13.0 l.349-356 / l.896-904);
- 0.14.0-0.15.x: FP8 for "FP8" in the text upper-cased (modelopt.py@0.14.0 l.396-403), NVFP4 as before;
- 0.16.0: FP8 only for the text "FP8" upper-cased; MXFP8 for "MXFP8" in it (modelopt.py@0.16.0 l.397-404,
  l.1628-1635);
- 0.17.0 on: the text upper-cased; FP8 for "FP8", NVFP4 for "NVFP4" or "FP4" in it, MXFP8 for "MXFP8" in it,
  MIXED_PRECISION for "MIXED_PRECISION" (modelopt.py@0.17.0 l.231-248, l.404-406, l.1006-1008, l.1505-1507,
  l.1745-1747; @0.30.0 l.278-295, l.446, l.760, l.1167, l.1575).
No override before 0.10.0 (none in modelopt.py@0.9.2). A section that no override takes keeps its method.

``get_min_capability`` (modelopt.py, every release from 0.6.1 read): "modelopt" 89 through 0.26.0, 80 from 0.27.0
(@0.26.0 l.412-413, @0.27.0 l.407-408, @0.30.0 l.439-440, @0.34.0 l.453-454); "modelopt_fp4" (registered from 0.9.0)
80 through 0.13.0, 75 from 0.14.0 (@0.13.0 l.873-874, @0.14.0 l.1033-1034); "modelopt_mxfp8" 100 on 0.16-0.19, 80 from
0.20.0 (@0.16.0 l.1593-1595, @0.20.0 l.1526-1528); "modelopt_mixed" 89 on 0.17-0.23, 75 from 0.24.0 (@0.17.0
l.1738-1739, @0.24.0). ``_get_quantization_config`` compares it with the card (config/vllm.py@0.12.0 l.367-377,
@0.30.0 l.832-842).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError

Version = tuple[int, int, int]
#: (whether the algorithm is under ``quantization``, the algorithm as text: "" when absent, None when ``quantization``
#: is no object, whether JSON gave a text): ``ModelSpec.modelopt_algo``.
Facts = tuple[bool, str | None, bool]

OVERRIDES_SINCE: Version = (0, 10, 0)
UPPER_FP8_SINCE: Version = (0, 14, 0)
MXFP8_SINCE: Version = (0, 16, 0)
UNIFIED_SINCE: Version = (0, 17, 0)  # _extract_modelopt_quant_algo: one upper-cased text for every override
PREFIX_SINCE: Version = (0, 22, 0)  # any method starting with "modelopt" is read


def facts(qc: Any) -> Facts | None:
    """What the overrides read of a section (module docstring); None for no section."""
    if not isinstance(qc, Mapping):
        return None
    nested = "quantization" in qc
    source = qc["quantization"] if nested else qc
    if not isinstance(source, Mapping):
        return True, None, False
    algo = source.get("quant_algo", "")
    return nested, str(algo), isinstance(algo, str)


def override(method: str, read: Facts | None, v: Version) -> str | None:
    """The ModelOpt class an override picks for the checkpoint's ``method`` at release ``v``; None: none does."""
    if read is None or v < OVERRIDES_SINCE:
        return None
    if not (method == "modelopt" or (v >= PREFIX_SINCE and method.startswith("modelopt"))):
        return None
    nested, algo, text = read
    if algo is None:
        return None
    if v >= UNIFIED_SINCE:
        said = algo.upper()  # str() of what JSON gave
        for name, takes in (("modelopt", said == "FP8"), ("modelopt_fp4", "NVFP4" in said or "FP4" in said),
                            ("modelopt_mxfp8", "MXFP8" in said), ("modelopt_mixed", said == "MIXED_PRECISION")):
            if takes:
                return name
        return None
    if not text:  # `"FP8" in algo` on a non-text (or str() of it from 0.14.0): not modelled
        raise UserError(f"cannot predict quantization_config (modelopt) quant_algo {algo!r}: not a text, which "
                        "vLLM's ModelOpt overrides before 0.17.0 test by substring")
    upper = algo.upper() if v >= UPPER_FP8_SINCE else algo
    if (upper == "FP8") if v >= MXFP8_SINCE else ("FP8" in upper):
        return "modelopt"
    if ("NVFP4" in algo) if nested else ("FP4" in algo.upper()):
        return "modelopt_fp4"
    if v >= MXFP8_SINCE and "MXFP8" in algo.upper():
        return "modelopt_mxfp8"
    return None


def min_capability(method: str, v: Version) -> int | None:
    """``get_min_capability`` of ModelOpt's class ``method`` at release ``v``; None: not a ModelOpt class there."""
    if method == "modelopt" and v >= (0, 6, 1):
        return 80 if v >= (0, 27, 0) else 89
    if method == "modelopt_fp4" and v >= (0, 9, 0):
        return 75 if v >= (0, 14, 0) else 80
    if method == "modelopt_mxfp8" and v >= MXFP8_SINCE:
        return 80 if v >= (0, 20, 0) else 100
    if method == "modelopt_mixed" and v >= UNIFIED_SINCE:
        return 75 if v >= (0, 24, 0) else 89
    return None


#: ``QUANT_ALGOS`` (modelopt.py@0.8.0 l.27 to @0.13.0 l.91), matched as written: ``from_config`` tests
#: ``quant_method not in QUANT_ALGOS`` on the text it read (``quantization.quant_algo``, or the section's own from
#: 0.10.0), upper-casing it only from 0.14.0 (@0.14.0 l.283-284: "Normalize quant_algo for robust matching (ModelOpt
#: may emit lowercase)"). Before 0.8.0 the FP8 class alone tests ``"FP8" in quant_method`` (modelopt.py@0.6.1 l.53-59,
#: @0.7.3).
QUANT_ALGOS = ("FP8", "NVFP4")
ALGOS_SINCE: Version = (0, 8, 0)
CLASS_UPPER_SINCE: Version = (0, 14, 0)
_ONLY = ("ValueError: ModelOpt currently only supports: ['FP8', 'NVFP4'] quantizations in vLLM. Please check the "
         "`hf_quant_config.json` file for your model's quant configuration.")
_ONLY_FP8 = ("ValueError: ModelOpt currently only supports static FP8quantization in vLLM. Please check the "
             "`hf_quant_config.json` file for your model's quant configuration.")


def class_refusal(chosen: str, read: Facts | None, v: Version) -> str | None:
    """What the ModelOpt class vLLM builds (``chosen``) raises in ``from_config`` for the algorithm's text before
    0.14.0, or None: "fp8" in lower case (which 0.14.0's normalisation takes) is refused by 0.6.1-0.13.0's
    ``ModelOptFp8Config`` / ``ModelOptNvFp4Config`` in these words (post hoc, hostile review 14). A flat section
    before 0.10.0, an absent or non-text algorithm are said elsewhere (``quant_modelopt_skip``, ``quant_config``)."""
    if chosen not in ("modelopt", "modelopt_fp4") or read is None or v >= CLASS_UPPER_SINCE or v < (0, 6, 1):
        return None
    nested, algo, text = read
    if not algo or not text or (not nested and v < OVERRIDES_SINCE):
        return None
    if v < ALGOS_SINCE:
        return None if "FP8" in algo else _ONLY_FP8
    return None if algo in QUANT_ALGOS else _ONLY
