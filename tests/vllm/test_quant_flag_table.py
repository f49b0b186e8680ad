"""Every ``--quantization`` method of every release read, typed on a 16-bit checkpoint: refused in vLLM's words,
"cannot predict", or sized only where the memory model sizes the method (fp8 online, bitsandbytes in-flight) —
never the 16-bit or fp8 size of a method it does not model (hostile review 15, H16). The methods are each release's
``QUANTIZATION_METHODS`` as ``arch_release`` read them from the wheels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import arch_release, catalog
from vllm_remedy.vllm.memory.config_values import ConfigRefused
from vllm_remedy.vllm.memory.core import estimate
from vllm_remedy.vllm.memory.settings import EngineSettings
from vllm_remedy.vllm.outcomes import Outcome

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
H100 = catalog.gpu("NVIDIA-H100-80GB-HBM3")
LLAMA = catalog.model("meta-llama/Llama-3.1-8B-Instruct")  # a 16-bit checkpoint
RELEASES = [".".join(map(str, r)) for r in arch_release.table().releases]
SIZED = {"fp8", "bitsandbytes"}  # online fp8 and in-flight bitsandbytes: the only methods sized without a section
#: vLLM's own refusal on a checkpoint without quantization_config (quant_flag, quant_support)
REFUSED_WORDS = {"fbgemm_fp8": "TypeError: FBGEMMFp8Config.__init__() missing 2 required positional arguments",
                 "ptpc_fp8": "ptpc_fp8 quantization is supported only on ROCm.",
                 "moe_wna16": "Cannot find the config file for moe_wna16"}


def _spec(name: str) -> catalog.ModelSpec:
    return catalog.ModelSpec.from_hf_config(json.loads((CONFIGS / name).read_text()), name)


def _outcome(spec: catalog.ModelSpec, method: str, version: str) -> tuple[str, str]:
    """(what the start is: "refused", "unknown" or the sized outcome, the words)."""
    try:
        settings = EngineSettings.from_flags({"quantization": method, "max-model-len": "8192"}, version)
        est = estimate(spec, H100, settings)
    except ConfigRefused as exc:
        return "refused", exc.error
    except UserError as exc:  # CannotPredict is one
        return "unknown", str(exc)
    if est.outcome is Outcome.CONFIG_REFUSED:
        return "refused", str(est.refusal)
    return est.outcome.value, f"{est.weights_gib:.2f} GiB"


CASES = [(v, m) for v in RELEASES for m in arch_release.methods(v)]


@pytest.mark.parametrize(("version", "method"), CASES, ids=[f"{v}-{m}" for v, m in CASES])
def test_a_typed_method_is_sized_only_where_modelled(version: str, method: str) -> None:
    kind, said = _outcome(LLAMA, method, version)
    if method in SIZED and kind not in ("refused", "unknown"):
        return  # sized: fp8 / in-flight 4-bit (or refused where the release refuses the flags: bitsandbytes)
    assert kind in ("refused", "unknown"), (version, method, kind, said)
    if kind == "unknown":
        assert said.startswith("cannot predict") and "cannot predict: cannot predict" not in said, said
    if method in REFUSED_WORDS and kind == "refused":
        assert REFUSED_WORDS[method] in said, said


def test_the_three_refusals_the_review_named_are_vllms_words() -> None:
    spec = LLAMA
    for method, words in REFUSED_WORDS.items():
        kind, said = _outcome(spec, method, "0.11.0")
        assert kind == "refused" and words in said, (method, kind, said)
    for method in ("experts_int8", "quark", "torchao"):
        kind, said = _outcome(spec, method, "0.11.0")
        assert kind == "unknown" and said.startswith(f"cannot predict --quantization {method}: not modelled"), said


def test_an_unjudged_method_on_a_quantized_checkpoint_is_not_sized_by_the_checkpoint() -> None:
    kind, said = _outcome(_spec("Qwen2.5-7B-Instruct-AWQ.json"), "quark", "0.11.0")
    assert kind == "unknown" and "on a awq checkpoint" in said, (kind, said)
