"""The max-length check of a sliding-window hybrid, by release, and the mxfp4 backend's weights: gpt-oss-120b on an
H100, figures computed by hand from vLLM's source rules (kv_layout.py and mxfp4.py cite the files and tags) and checked
against the 0.16.0 log in tests/data/calibration (47,904 tokens, 0.65x for 131,072, 64.38 GiB of weights, started)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import GIB, ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate, resolve
from vllm_remedy.vllm.memory import mxfp4 as mx
from vllm_remedy.vllm.memory.calibration import estimate_case
from vllm_remedy.vllm.memory.kv_layout import KvLayout, check_rule, group_size
from vllm_remedy.vllm.memory.terms import activation_gib, kv_layout
from vllm_remedy.vllm.memory.weights import weights_gib
from vllm_remedy.vllm.outcomes import Outcome

DATA = Path(__file__).resolve().parents[2] / "data"
CASE = DATA / "calibration" / "h100-v0.16.0-gpt-oss-120b-u0.95.yaml"
H100 = catalog.gpu("NVIDIA-H100-80GB-HBM3")
FLAGS = {"dtype": "bfloat16", "gpu-memory-utilization": "0.95", "max-num-batched-tokens": "16384"}

# gpt-oss-120b: 18 sliding (128 tokens, layer 0 first) and 18 full layers, 8 KV heads x 64, bf16, 16-token blocks.
PAGE = 16 * 2 * 8 * 64 * 2  # one layer, one block: 32,768 B
BLOCK = PAGE * 18  # one block id across a group of 18 layers: 589,824 B
FULL_BLOCKS = 131072 // 16  # 8,192
SLIDING_BLOCKS = -(-(128 - 1 + 16384) // 16) + 1  # 1,032 + 1 for misalignment = 1,033


def gpt_oss() -> ModelSpec:
    return ModelSpec.from_hf_config(json.loads((DATA / "configs" / "gpt-oss-120b.json").read_text()), "gpt-oss-120b")


def case_model() -> ModelSpec:
    """The calibration case's model: the same config with the published 116.83 B parameters."""
    case = yaml.safe_load(CASE.read_text())
    return ModelSpec.from_hf_config(case["model_config"], case["model"], case["model_params_b"])


def layout(version: str) -> KvLayout:
    model = gpt_oss()
    return kv_layout(model, resolve(model, H100, EngineSettings.from_flags(FLAGS, version)))


@pytest.mark.parametrize(
    ("version", "rule"),
    [("0.10.1", "layers"), ("0.13.0", "layers"), ("0.14.0", "first_group"), ("0.16.0", "first_group"),
     ("0.18.1", "first_group"), ("0.19.0", "groups"), ("0.21.0", "groups"), ("0.34.0", "groups")],
)
def test_the_check_rule_follows_the_release(version, rule):
    assert check_rule(tuple(int(x) for x in version.split("."))) == rule


def test_gpt_oss_groups_put_the_sliding_layer_first():
    lay = layout("0.16.0")
    assert (lay.page_bytes, lay.group_layers, lay.windows, lay.block_bytes) == (PAGE, 18, (None, 128), BLOCK)
    assert lay.windows[lay.first] == 128  # vLLM's kv_cache_groups[0]: gpt_oss.py makes even layers sliding


def test_the_needs_by_rule_by_hand():
    lay = layout("0.16.0")
    # 0.14-0.18: the first group's blocks times group size x page: 1,033 x 589,824 B = 0.567 GiB.
    assert lay.needed_bytes(131072, 16384, "first_group") == SLIDING_BLOCKS * BLOCK == 609_288_192
    # From 0.19 every group's blocks; through 0.13 every layer's own need (no padding here): both 5.07 GiB.
    both = (FULL_BLOCKS + SLIDING_BLOCKS) * BLOCK
    assert both == 5_441_126_400
    assert lay.needed_bytes(131072, 16384, "groups") == both
    assert lay.needed_bytes(131072, 16384, "layers") == 18 * PAGE * (FULL_BLOCKS + SLIDING_BLOCKS) == both


def test_the_logged_cache_explains_the_log_lines():
    """3.29 GiB available: 5,989 blocks, 47,904 tokens, 5,989 / 9,225 = 0.649 -> "0.65x", and 0.567 GiB needed."""
    lay = layout("0.16.0")
    blocks = int(3.29 * GIB // BLOCK)
    assert blocks == 5989
    assert lay.tokens(blocks) == 47_904
    assert lay.blocks_for(131072, 16384) == 9225
    assert f"{blocks / lay.blocks_for(131072, 16384):.2f}" == "0.65"
    # 0.16 compared 0.567 GiB with 3.29 GiB and started; 0.13 or 0.19 would have compared 5.07 GiB and refused.
    assert lay.needed_bytes(131072, 16384, "first_group") <= 3.29 * GIB < lay.needed_bytes(131072, 16384, "groups")


def test_the_case_starts_on_0_16_and_would_have_been_refused_on_0_13():
    case = yaml.safe_load(CASE.read_text())
    est = estimate_case(case)
    assert est.outcome is Outcome.FITS and est.outcome.value == case["logged"]["outcome"]
    assert est.max_concurrency == pytest.approx(est.gpu_blocks / 9225)
    assert 0.95 * 47_904 <= est.kv_cache_tokens <= 47_904
    older = estimate_case({**case, "vllm_version": "0.13.0"})
    assert older.outcome is Outcome.MAX_LEN_EXCEEDS_KV
    assert older.needed_kv_gib == pytest.approx(5_441_126_400 / GIB)


def test_a_tighter_budget_on_0_19_is_refused_where_0_18_starts():
    model = gpt_oss()
    flags = {**FLAGS, "gpu-memory-utilization": "0.89"}
    assert estimate(model, H100, EngineSettings.from_flags(flags, "0.18.1")).outcome is Outcome.FITS
    est = estimate(model, H100, EngineSettings.from_flags(flags, "0.19.0"))
    assert est.outcome is Outcome.MAX_LEN_EXCEEDS_KV
    assert est.kv_cache_gib * GIB < 5_441_126_400


@pytest.mark.parametrize(
    ("full", "sliding", "version", "size"),
    [(13, 12, "0.11.2", 12), (13, 12, "0.12.0", 13), (10, 14, "0.17.0", 10), (10, 14, "0.18.0", 14),
     (18, 18, "0.16.0", 18)],
)
def test_group_size_pads_the_short_kind_by_release(full, sliding, version, size):
    assert group_size(full, sliding, tuple(int(x) for x in version.split("."))) == size


@pytest.mark.parametrize(
    ("capability", "version", "backend"),
    [((8, 0), (0, 16, 0), "marlin"), ((8, 9), (0, 16, 0), "marlin"), ((9, 0), (0, 11, 2), "marlin"),
     ((9, 0), (0, 12, 0), "triton"), ((9, 0), (0, 16, 0), "triton"), ((10, 0), (0, 16, 0), "flashinfer"),
     ((12, 0), (0, 16, 0), "marlin"), (None, (0, 16, 0), "marlin")],
)
def test_the_mxfp4_backend_by_gpu_and_release(capability, version, backend):
    assert mx.backend(capability, version) == backend


def test_triton_weights_by_hand_match_the_logged_64_38_gib():
    """128 experts x 36 layers of w13 (5,760 x 2,880) and w2 (2,880 x 2,880) at 4 bits: 53.394 GiB; the checkpoint's
    scales kept (1/32 B a value): 3.337; the swizzled scales, rows padded to 256 (5,888 x 90 + 3,072 x 90 each):
    3.461; float32 biases, 2 B more on 8,640 each: 0.074; the other 2.17 B parameters (of the published 116.83 B) in
    bf16: 4.039; 0.10 of buffers. 64.40 GiB, logged 64.38 (0.16.0 here, 0.14.1 in vllm#33155)."""
    model = case_model()
    res = resolve(model, H100, EngineSettings.from_flags(FLAGS, "0.16.0"))
    experts = 128 * 36
    values = experts * 3 * 2880 * 2880 / 2
    kept = experts * 3 * 2880 * 2880 / 32
    swizzled = experts * (5888 * 90 + 3072 * 90)
    bias = experts * (2 * 2880 + 2880) * 2
    rest = (model.params_b - model.expert_params_b) * 1e9 * 2
    by_hand = (values + kept + swizzled + bias + rest) / GIB + 0.10
    assert weights_gib(model, res, None, (9, 0)) == pytest.approx(by_hand)
    assert by_hand == pytest.approx(64.38, abs=0.03)
    # Marlin pads hidden to 3,072 and the intermediate to 2,944 (logged 65.97 on 0.10.1, vllm#23278).
    marlin = weights_gib(model, res, None, (8, 0))
    assert marlin == pytest.approx(((experts * 3 * 3072 * 2944 * (0.5 + 1 / 32)) + rest) / GIB + 0.10)
    # From 0.25 the Triton path frees the checkpoint's scales.
    res25 = resolve(model, H100, EngineSettings.from_flags(FLAGS, "0.25.0"))
    assert weights_gib(model, res25, None, (9, 0)) == pytest.approx(by_hand - kept / GIB)


def test_the_triton_moe_buffers_are_a_forward_phase_not_added_to_the_sampler():
    """0.16's sampler warm-up sorts 1,024 rows of 201,088 logits (38 B each: 7.29 GiB) over the held hidden states;
    the Triton MoE's per-call buffers (16,384 x (4 x 2,880 + 2,880) x 2 B = 0.44 GiB) are freed before it."""
    model = gpt_oss()
    res = resolve(model, H100, EngineSettings.from_flags(FLAGS, "0.16.0"))
    assert mx.triton_forward_bytes(model, 16384, 1, 2) == 16384 * 5 * 2880 * 2
    sampler = 1024 * 201088 * 38 + 16384 * 2880 * 1.25 * 2
    assert activation_gib(model, res, (9, 0)) == pytest.approx(sampler / GIB + 0.09)
    assert activation_gib(model, res, (8, 0)) > activation_gib(model, res, (9, 0)) + 1.0  # Marlin keeps the MoE term
