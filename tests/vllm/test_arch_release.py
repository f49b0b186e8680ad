"""Whether a vLLM release implements the model's architecture and its checkpoint's quantization method
(``vllm.arch_release``, the table ``scripts/vllm_registry.py`` generates from each release's wheel), and the memory
model's verdict: vLLM's refusal (``config_refused``) or, where the Transformers backend would run it, "cannot predict".
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.wheels import sources as wheel_sources
from vllm_remedy.vllm import arch_release, catalog
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.outcomes import Outcome

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests/data/configs"


def gpt_oss() -> ModelSpec:
    return ModelSpec.from_hf_config(json.loads((CONFIGS / "gpt-oss-20b.json").read_text()), "openai/gpt-oss-20b")


def run(model: ModelSpec, gpu: str, version: str, max_len: int = 16384) -> Outcome:
    return estimate(model, catalog.gpu(gpu), EngineSettings.from_flags({"max-model-len": str(max_len)},
                                                                      version)).outcome


@pytest.mark.parametrize(("name", "first", "last"), [
    ("Qwen3ForCausalLM", (0, 8, 4), None),  # registry.py@0.8.4 registers it; @0.8.3 does not
    ("GptOssForCausalLM", (0, 10, 1), None),  # registry.py@0.10.1; @0.10.0 does not
    ("Phi3SmallForCausalLM", (0, 5, 5), (0, 9, 2)),  # _PREVIOUSLY_SUPPORTED_MODELS@0.10.0: "0.9.2"
])
def test_table_spans(name, first, last):
    assert arch_release.table().architectures[name] == ((first, last),)


def test_quantization_spans():
    quant = arch_release.table().quantization
    assert quant["mxfp4"] == (((0, 10, 1), None),)  # QuantizationMethods of quantization/__init__.py@0.10.1
    assert quant["squeezellm"] == (((0, 5, 5), (0, 6, 0)),)
    # a name can leave a table and come back: ChatGLMForConditionalGeneration is no key at 0.7.3-0.8.3
    assert arch_release.table().architectures["ChatGLMForConditionalGeneration"] == (
        ((0, 5, 5), (0, 7, 2)), ((0, 8, 4), None))


def test_releases_between_take_the_nearest_read_one_below():
    assert arch_release.read_release("0.8.2") == (0, 8, 0)
    assert arch_release.read_release("0.10.1.1") == (0, 10, 1)
    assert arch_release.read_release("0.40.0") == (0, 34, 0)  # newer than read: today's names, extrapolated


def test_qwen3_on_063_is_refused_in_vllms_words():
    qwen3 = catalog.model("Qwen/Qwen3-8B")
    assert run(qwen3, "NVIDIA-L4", "0.6.3") is Outcome.CONFIG_REFUSED
    why = arch_release.refusal(qwen3, "0.6.3")
    assert why is not None and why.startswith("ValueError: Model architectures ['Qwen3ForCausalLM'] are not "
                                              "supported for now. Supported architectures: [")
    assert "dict_keys([" in (arch_release.refusal(qwen3, "0.7.0") or "")  # get_supported_archs from 0.6.4


def test_qwen3_on_a_release_with_it_is_sized():
    qwen3 = catalog.model("Qwen/Qwen3-8B")
    assert run(qwen3, "NVIDIA-L4", "0.8.4") is Outcome.FITS
    assert arch_release.refusal(qwen3, "0.8.5") is None


def test_qwen3_where_the_transformers_backend_would_run_it_cannot_be_predicted():
    with pytest.raises(CannotPredict, match="Transformers backend"):
        run(catalog.model("Qwen/Qwen3-8B"), "NVIDIA-L4", "0.8.3")


def test_gpt_oss_on_085_is_refused_for_its_mxfp4():
    model = gpt_oss()
    assert run(model, "NVIDIA-H100-80GB-HBM3", "0.8.5") is Outcome.CONFIG_REFUSED
    assert (arch_release.refusal(model, "0.8.5") or "").startswith("ValueError: Unknown quantization method: mxfp4. "
                                                                   "Must be one of [")
    assert (arch_release.refusal(model, "0.6.3") or "").startswith("ValueError: Model architectures "
                                                                   "['GptOssForCausalLM']")
    assert arch_release.refusal(model, "0.10.1") is None


def test_a_method_a_later_release_dropped_is_not_judged():
    """inc's override takes auto-round checkpoints once auto-round left QuantizationMethods (inc.py@0.15.0)."""
    model = dataclasses.replace(catalog.model("Qwen/Qwen3-8B"), quantization="auto-round", weight_bits=4)
    assert arch_release.quantization_refusal(model, "0.15.0") is None
    assert arch_release.quantization_refusal(model, "0.8.5") is not None  # auto-round arrived at 0.9.0


def test_the_pods_copy_is_the_tools_table():
    tools = (ROOT / "src/vllm_remedy/vllm/data/vllm_registry.json").read_text()
    assert (ROOT / "src/vllm_remedy/sim/vllm_pod/vllm_registry.json").read_text() == tools


def test_the_table_matches_the_generator_on_a_few_releases():
    """Regenerated from the wheels when they are extracted (VLLM_WHEEL_SOURCES; the generator's own check too)."""
    sources = wheel_sources()
    if not sources:
        pytest.skip("VLLM_WHEEL_SOURCES names no extracted vLLM wheels; scripts/vllm_registry.py --sources DIR --check")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import vllm_registry
    finally:
        sys.path.pop(0)
    for release in ("0.6.3", "0.8.4", "0.10.1", "0.34.0"):
        pkg = next(s / f"src-{release}/vllm" for s in sources if (s / f"src-{release}/vllm").is_dir())
        names = set(vllm_registry.architectures(pkg))
        assert set(arch_release.names(release)) == names, release
        assert set(arch_release.methods(release)) == set(vllm_registry.quantization_methods(pkg)), release
    args = [sys.executable, str(ROOT / "scripts/vllm_registry.py"), "--check"]
    for s in sources:
        args += ["--sources", str(s)]
    assert subprocess.run(args, capture_output=True, text=True).returncode == 0
