"""The caching allocator's unsplit tails on weight tensors (``alloc_tail``), checked on the two FP8 32B logs."""

from __future__ import annotations

from pathlib import Path

import yaml

from vllm_remedy.vllm.memory.alloc_tail import MIB, unsplit_tail_bytes
from vllm_remedy.vllm.memory.calibration import estimate_case

CASES = Path(__file__).resolve().parents[2] / "data" / "calibration"


def test_odd_mib_tensors_keep_their_tail() -> None:
    assert unsplit_tail_bytes(25 * MIB) == MIB  # 5120 x 5120 FP8: a 26 MiB segment, the 1 MiB rest not split off
    assert unsplit_tail_bytes(50 * MIB) == 0  # the same matrix in bf16: an exact 2 MiB multiple
    assert unsplit_tail_bytes(int(67.5 * MIB)) == MIB // 2
    assert unsplit_tail_bytes(int(12.5 * MIB)) == 0  # 1.5 MiB rest: split off
    assert unsplit_tail_bytes(9 * MIB) == 0  # below 10 MiB: carved from a shared 20 MiB segment


def test_fp8_32b_weights_match_their_logs() -> None:
    """Post hoc: the logs that exposed the mechanism (32.1993 and 32.0418 GiB loaded)."""
    l40s = yaml.safe_load((CASES / "l40s-v0.11.0-r1-distill-qwen-32b-fp8-fp16-24k.yaml").read_text())
    h100 = yaml.safe_load((CASES / "h100-v0.10.2-qwen3-32b-fp8-32k-u0.96.yaml").read_text())
    assert abs(estimate_case(l40s).weights_gib - 32.1993) < 0.03
    assert abs(estimate_case(h100).weights_gib - 32.0418) < 0.03
