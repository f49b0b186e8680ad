"""Rules read from source after batch 2026-12-06b's blind misses (post hoc, each said so where it lives): T4's
measured CUDA context, V0's capture after the freed profile, and chunked prefill off by default before 0.5.3."""

from __future__ import annotations

from pathlib import Path

import yaml

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import chunked
from vllm_remedy.vllm.memory.calibration import estimate_case
from vllm_remedy.vllm.memory.non_torch import CONTEXT_SMALL_GPU_GIB, context_gib

CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"


def _case(name: str) -> dict:
    return yaml.safe_load((CASES / f"{name}.yaml").read_text())


def test_a_t4_holds_the_context_its_logs_measure():
    """Three T4 logs' startup lines show 0.10-0.11 GiB used; the size class's 0.37 made a 7B fp16 start that loaded
    its weights read as oom_loading_weights, where it died in the profile."""
    t4 = catalog.gpu("Tesla-T4")
    assert t4.context_gib == 0.11 and context_gib(t4, 1) == 0.11
    assert context_gib(catalog.gpu("NVIDIA-L4"), 1) == CONTEXT_SMALL_GPU_GIB  # no measurement: the class's figure
    assert t4.with_total(14.5).context_gib == 0.11
    assert estimate_case(_case("t4-v0.19.1-qwen2.5-7b-fp16-4k-u0.85-profile-oom")).start == "profile_oom"


def test_v0_captures_into_the_room_its_freed_profile_left():
    """V0 0.8.5 empties the allocator after the profile and only captures after the cache: the T4 AWQ start whose
    notebook shows the capture finished is not a capture OOM."""
    est = estimate_case(_case("t4-v0.8.5-llama-2-7b-32k-instruct-awq-16k-u0.95-v0"))
    assert est.start == "fits" and not est.graph_capture_oom


def test_chunked_prefill_is_off_by_default_before_0_5_3():
    model = catalog.model("meta-llama/Llama-3.1-8B-Instruct")
    assert chunked.v0_default(model, (0, 4, 1), 65536, False) is False
    assert chunked.v0_default(model, (0, 5, 0), 65536, False) is False
    assert chunked.v0_default(model, (0, 5, 3), 65536, False) is True
