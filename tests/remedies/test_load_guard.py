"""Load caps, pure: batched tokens against the effective default, multimodal limits, LoRA caps."""

from __future__ import annotations

import pytest

from fixtures.pod_templates import MODEL
from vllm_remedy.policy import LoadShedding
from vllm_remedy.remedies.load_guard import format_mm_limits, guard_flags, parse_mm_limits


def test_batched_tokens_cap_compares_with_the_effective_default() -> None:
    shed = LoadShedding(max_num_batched_tokens=4096)
    base = {"max-model-len": "16384"}
    assert guard_flags(base, shed, model=MODEL, version="0.8.5", gpu="NVIDIA-L40S").set == {}
    assert guard_flags({**base, "max-num-batched-tokens": "16384"}, shed, model=MODEL, version="0.8.5",
                       gpu="NVIDIA-L40S").set == {"max-num-batched-tokens": "4096"}
    v0 = guard_flags({**base, "max-num-batched-tokens": "16384"}, shed, model=MODEL, version="0.6.6",
                     gpu="NVIDIA-L40S")
    assert v0.set == {}
    assert v0.notes == ("--max-num-batched-tokens 4096 not applied: without chunked prefill vLLM needs it >= "
                        "--max-model-len 16384",)


@pytest.mark.parametrize(("version", "text"), [("0.6.6", "image=2,video=1"), ("0.8.4", "image=2,video=1"),
                                               ("0.8.5", '{"image":2,"video":1}'), (None, '{"image":2,"video":1}')])
def test_mm_limits_in_the_running_versions_syntax(version: str | None, text: str) -> None:
    assert format_mm_limits({"video": 1, "image": 2}, version) == text
    assert parse_mm_limits(text) == {"image": 2, "video": 1}


def test_mm_and_lora_caps_only_where_they_apply_and_only_lower() -> None:
    shed = LoadShedding(limit_mm_per_prompt={"image": 2}, max_loras=2)
    vl = "Qwen/Qwen2.5-VL-7B-Instruct"
    got = guard_flags({"limit-mm-per-prompt": "image=4,video=1", "enable-lora": "true", "max-loras": "8"}, shed,
                      model=vl, version="0.8.4", gpu=None)
    assert got.set == {"limit-mm-per-prompt": "image=2,video=1", "max-loras": "2"}
    text = guard_flags({}, shed, model=MODEL, version="0.8.5", gpu=None)
    assert text.set == {}
    assert text.notes == (f"--limit-mm-per-prompt: {MODEL} is not a multimodal model",
                          "--max-loras: LoRA is not enabled (--enable-lora)")
    lower = guard_flags({"limit-mm-per-prompt": '{"image":1}'}, shed, model=vl, version="0.9.0", gpu=None)
    assert lower.set == {}
