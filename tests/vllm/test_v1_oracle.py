"""The V1 oracle's fallbacks on 0.8.0-0.10.2 (``vllm.v1_oracle``, engine/arg_utils.py `_is_v1_supported_oracle` read
per release): an fp8 KV cache leaves V1 for V0 wherever FlashAttention 3 does not run, and VLLM_USE_V1=1 turns each
fallback into a refusal. Before, only the capability fallback (and only through 0.9) was modelled."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.engine_env import engine_rules
from vllm_remedy.vllm.v1_oracle import fallback
from vllm_remedy.vllm.versions import as_v0, rules, rules_on_device

L4, L40S, A100, H100, B200, RTX5090, T4 = (8, 9), (8, 9), (8, 0), (9, 0), (10, 0), (12, 0), (7, 5)


@pytest.mark.parametrize(("version", "card", "kv", "mla", "engine"), [
    ("0.8.0", H100, "fp8", False, "V0"),  # 0.8.0-0.8.1: any value but auto, Hopper too
    ("0.8.1", H100, "fp8", False, "V0"),
    ("0.8.2", H100, "fp8", False, "V1"),  # FA3 takes fp8 on Hopper from 0.8.2
    ("0.8.5", H100, "fp8_e4m3", False, "V1"),
    ("0.8.5", L40S, "fp8", False, "V0"), ("0.8.5", A100, "fp8", False, "V0"), ("0.9.2", L4, "fp8", False, "V0"),
    ("0.9.2", B200, "fp8", False, "V0"),  # FA is forced back to 2 on 10.x
    ("0.10.1.1", B200, "fp8", False, "V1"),  # is_kv_cache_dtype_supported: exactly 10.0
    ("0.10.2", RTX5090, "fp8", False, "V0"), ("0.10.2", L40S, "fp8", False, "V0"), ("0.10.2", H100, "fp8", False, "V1"),
    ("0.9.2", L40S, "fp8", True, "V0"), ("0.10.1", L40S, "fp8", True, "V0"),
    ("0.10.2", L40S, "fp8", True, "V1"),  # MLA takes FlashMLA, which takes fp8 (platforms/cuda.py@0.10.2)
    ("0.10.2", L40S, "auto", False, "V1"),
    ("0.11.0", L40S, "fp8", False, "V1"),  # no V0 left
    ("0.7.3", L40S, "fp8", False, "V0"),  # V0 anyway
])
def test_the_engine_an_fp8_kv_cache_runs(version, card, kv, mla, engine):
    assert rules_on_device(version, card, kv, None, mla).engine == engine


def test_a_fallback_runs_v0s_rules_and_unknown_cards_keep_v1():
    assert rules_on_device("0.8.5", L40S, "fp8") == as_v0(rules("0.8.5"))
    assert rules_on_device("0.8.5", None, "fp8") == rules("0.8.5")


def test_float32_falls_back_through_0_9_1_and_the_capability_check_through_0_10_1():
    assert fallback((0, 9, 1), A100, dtype="float32") == "--dtype torch.float32"
    assert fallback((0, 9, 2), A100, dtype="float32") is None
    assert fallback((0, 10, 1), T4) == "Compute Capability < 8.0"  # arg_utils.py@0.10.1.1 still checks it
    assert fallback((0, 10, 2), T4) is None


@pytest.mark.parametrize(("version", "card", "said"), [
    ("0.8.5", L4, "refuses it with --kv-cache-dtype fp8 on a GPU of compute capability 8.9 (NotImplementedError: "
                  "VLLM_USE_V1=1 is not supported with --kv-cache-dtype"),
    ("0.10.2", L40S, "VLLM_USE_V1=1 is not supported with --kv-cache-dtype"),
    ("0.8.0", H100, "VLLM_USE_V1=1 is not supported with --kv-cache-dtype"),
])
def test_vllm_use_v1_1_refuses_an_fp8_cache_v1_cannot_take(version, card, said):
    why = engine_rules(version, card, "1", None, "fp8")[1]
    assert why is not None and why.startswith("VLLM_USE_V1=1: ") and said in why, why
    assert engine_rules(version, card, "0", None, "fp8") == (as_v0(rules(version)), None)
    assert engine_rules("0.8.5", H100, "1", None, "fp8") == (rules("0.8.5"), None)


def test_vllm_use_v1_1_refuses_float32_and_capability_below_8_on_0_10_1():
    assert "with --dtype float32 (NotImplementedError: VLLM_USE_V1=1 is not supported with --dtype torch.float32" in \
        str(engine_rules("0.9.1", A100, "1", None, "auto", "float32")[1])
    assert "Compute Capability < 8.0" in str(engine_rules("0.10.1", T4, "1")[1])
