"""What else VLLM_MLA_DISABLE changes besides the cache (``vllm.memory.mla_release``), through the real `estimate` CLI:
vLLM reads ``model_config.use_mla``, which the variable turns off, not whether the config has ``kv_lora_rank``.

- The V1 oracle of 0.10.2 asks ``is_kv_cache_dtype_supported(kv_cache_dtype, model_config)``: an MLA model takes
  FlashMLA, which keeps fp8, but with MLA off FlashAttention is the default and fp8 needs FA3 on Hopper
  (platforms/cuda.py@0.10.2), so an A100 falls back to V0, or refuses under VLLM_USE_V1=1.
- V0's chunked-prefill default leaves out ``use_mla`` models only ("Chunked prefill not supported for Multimodal or
  MLA in V0", ``_set_default_args_v0``, engine/arg_utils.py@0.8.0, @0.9.2, @0.10.2): with MLA off a 163,840-token
  DeepSeek start chunks, so the profile runs the chunk, not the whole length.
- DeepSeek-V3.2 with MLA off fails while the model is built (deepseek_v2.py@0.11.0-@0.34.0 assert), which no
  outcome class names: "cannot predict", saying so."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

CONFIG = Path(__file__).resolve().parents[1] / "data" / "configs" / "DeepSeek-V2-Lite.json"


def _estimate(*args: str, config: Path = CONFIG) -> dict:
    got = run_cli("estimate", "--model-config", str(config), *args, "-o", "json")
    assert got.returncode == 0, got.stdout + got.stderr
    return json.loads(got.stdout)


def test_the_v1_oracle_reads_use_mla_on_0_10_2():
    a100 = ("--gpu", "NVIDIA-A100-SXM4-80GB", "--max-model-len", "32768", "--vllm-version", "0.10.2",
            "--kv-cache-dtype", "fp8")
    assert _estimate(*a100, "--vllm-mla-disable", "0")["engine"] == "V1"  # FlashMLA keeps fp8 on any card
    off = _estimate(*a100, "--vllm-mla-disable", "1")
    assert off["engine"] == "V0", off  # FlashAttention 2 on 8.0: no fp8 KV, "Falling back to V0"
    forced = _estimate(*a100, "--vllm-mla-disable", "1", "--vllm-use-v1", "1")
    assert forced["outcome"] == "config_refused", forced
    assert "VLLM_USE_V1=1 is not supported with --kv-cache-dtype" in forced["refusal"], forced


def test_v0_chunks_a_long_deepseek_start_when_mla_is_off():
    """0.9.2 on V0 at 163,840 tokens: MLA on, chunked prefill stays off and the profile runs the whole length (an
    activation of many GiB); off, it is on and the profile runs V0's default chunk (about a GiB)."""
    v0 = ("--gpu", "NVIDIA-H100-80GB-HBM3", "--max-model-len", "163840", "--vllm-version", "0.9.2",
          "--vllm-use-v1", "0")
    on = _estimate(*v0, "--vllm-mla-disable", "0")
    off = _estimate(*v0, "--vllm-mla-disable", "1")
    assert on["engine"] == off["engine"] == "V0"
    assert on["activation_gib"] > 5 > 2 > off["activation_gib"], (on, off)


def test_v3_2_without_mla_says_why_it_cannot_be_predicted(tmp_path):
    config = json.loads(CONFIG.read_text())
    config.update(architectures=["DeepseekV32ForCausalLM"], index_head_dim=128, index_n_heads=64, index_topk=2048)
    v32 = tmp_path / "config.json"
    v32.write_text(json.dumps(config))
    for version in ("0.11.0", "0.30.0"):
        got = run_cli("estimate", "--model-config", str(v32), "--gpu", "NVIDIA-H100-80GB-HBM3", "--max-model-len",
                      "32768", "--vllm-version", version, "--vllm-mla-disable", "1")
        assert got.returncode == 2, got.stdout + got.stderr
        assert "cannot predict DeepseekV32ForCausalLM without MLA" in got.stderr, got.stderr
        assert "AssertionError: topk_indices_buffer is not supported for DeepseekV2Attention" in got.stderr, got.stderr


def test_plan_notes_what_unsetting_vllm_mla_disable_would_give():
    """The planner writes flags, not the container's env: with MLA off V2-Lite holds 136k tokens at 163,840 on an
    H100 (max_len_exceeds_kv), with MLA about 1.45M, so the plan says so in a note and offers no env rung."""
    args = ("plan", "--model-config", str(CONFIG), "--gpu", "NVIDIA-H100-80GB-HBM3", "--max-model-len", "163840",
            "--vllm-version", "0.30.0", "-o", "json")
    off = run_cli(*args, "--vllm-mla-disable", "1")
    assert off.returncode in (0, 1), off.stdout + off.stderr
    plan = json.loads(off.stdout)
    notes = [n for n in plan["notes"] if n.startswith("VLLM_MLA_DISABLE=1 in the pod's env turns MLA off")]
    assert len(notes) == 1 and "unset, the current flags are predicted to fit" in notes[0], plan["notes"]
    assert not any("VLLM_MLA_DISABLE" in json.dumps(step) for step in plan["steps"]), plan["steps"]
    on = json.loads(run_cli(*args, "--vllm-mla-disable", "0").stdout)
    assert not any("VLLM_MLA_DISABLE" in n for n in on["notes"]), on["notes"]
