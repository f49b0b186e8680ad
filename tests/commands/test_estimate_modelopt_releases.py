"""ModelOpt's ``producer`` / ``quantization.quant_algo`` read release by release, through the real CLI against a
Hub-compatible server (HF_ENDPOINT, never the real Hub): from ``hf_quant_config.json`` (ModelOpt <= 0.29 exports,
NVIDIA's older ``*-FP8`` repositories) and from a config.json section that names no ``quant_method``.

vLLM reads the file from 0.10.1 (transformers_utils/config.py@0.10.1 l.497-505, @0.30.0 l.829-841) and maps the
section's algorithm to a method from the same release (config/__init__.py@0.10.1 l.1064-1084: FP8 -> modelopt, NVFP4
-> modelopt_fp4, any other stated one refused; upper-cased from 0.14.0, model_arch_config_convertor.py@0.14.0
l.139-165). Before 0.10.1 the file is never read: the checkpoint's FP8 tensors go into the 16-bit model config.json
describes, which is not predicted. Before this change 0.30.0 said "cannot predict: ... names no quant_method" and
0.9.0 / 0.10.2 said config_refused."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server

FP8 = 1.79  # the same with its linear layers at 8 bits (embeddings tied and 16-bit)


def modelopt(algo: str) -> dict:
    return {"producer": {"name": "modelopt", "version": "0.27.0"},
            "quantization": {"quant_algo": algo, "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}


REPOS = {f"acme-corp/SmolLM2-{algo}": Repo({"config.json": SMOLLM2_CONFIG, "hf_quant_config.json": modelopt(algo)})
         for algo in ("FP8", "NVFP4", "fp8")}
IN_CONFIG = "acme-corp/SmolLM2-FP8-in-config"  # the file's mapping pasted into config.json: no quant_method
REPOS[IN_CONFIG] = Repo({"config.json": {**SMOLLM2_CONFIG, "quantization_config": modelopt("FP8")}})
FLAT_NVFP4 = "acme-corp/SmolLM2-NVFP4-flat"  # the same algorithm in config.json's flat spelling
REPOS[FLAT_NVFP4] = Repo({"config.json": {**SMOLLM2_CONFIG, "quantization_config": {
    "quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}}})
# NVFP4 (memory.nvfp4): 1.61e9 linear weights at 0.5 B packed + 1/16 B of FP8 scale per copy kept, 16-bit tied
# embeddings, 0.10 GiB of buffers: one copy (Marlin below capability 100, every path from 0.10.2) 1.13 GiB, two
# (CUTLASS keeps the loaded scales beside the swizzled ones through 0.10.1) 1.23.
NVFP4, NVFP4_BOTH_SCALES = 1.13, 1.23


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    saved = dict(os.environ)
    with hub_server(REPOS) as server:
        os.environ.update({"HF_ENDPOINT": server.url, "HF_HOME": str(tmp_path_factory.mktemp("hf")),
                           "HF_HUB_OFFLINE": "0"})
        try:
            yield server
        finally:
            os.environ.clear()
            os.environ.update(saved)


def estimate(model: str, version: str, gpu: str = "NVIDIA-L4") -> dict:
    got = run_cli("estimate", "--model", model, "--gpu", gpu, "--max-model-len", "8192",
                  "--vllm-version", version, "-o", "json")
    if got.returncode:
        return {"error": got.stderr}
    return json.loads(got.stdout)


@pytest.mark.parametrize("version", ["0.10.1", "0.10.2", "0.13.0", "0.14.0", "0.30.0", "0.34.0"])
def test_an_fp8_file_is_sized_as_modelopt_fp8_where_vllm_reads_it(hub, version):
    got = estimate("acme-corp/SmolLM2-FP8", version)
    assert got.get("outcome") == "fits" and got["weights_gib"] == FP8, got
    fp8_cache = "fp8_e4m3" in (got.get("kv_cache_dtype_note") or "")
    assert fp8_cache == (version >= "0.14.0"), got  # kv_cache_quant_algo FP8 resolves auto from 0.14.0


@pytest.mark.parametrize("version", ["0.9.0", "0.10.0"])
def test_before_0_10_1_the_file_is_not_read(hub, version):
    """Not a refusal of the config (nothing there names a method), nor 16-bit weights: the 16-bit layers get the
    checkpoint's ModelOpt tensors and their scales (llama.py@0.9.0 load_weights), a load this tool does not size."""
    got = estimate("acme-corp/SmolLM2-FP8", version)
    assert "before 0.10.1 do not read hf_quant_config.json" in got.get("error", ""), got


@pytest.mark.parametrize(("version", "gpu", "want"), [
    ("0.10.1", "NVIDIA-L4", NVFP4), ("0.10.1", "NVIDIA-B200", NVFP4_BOTH_SCALES), ("0.10.2", "NVIDIA-B200", NVFP4),
    ("0.13.0", "NVIDIA-L4", NVFP4), ("0.30.0", "NVIDIA-L4", NVFP4), ("0.34.0", "NVIDIA-B200", NVFP4)])
def test_nvfp4_from_the_file_is_sized_as_the_same_algorithm_in_config_json(hub, version, gpu, want):
    """The file's NVFP4 maps to "modelopt_fp4" (the class config.json's flat ``quant_method: modelopt`` +
    ``quant_algo: NVFP4`` gets through the override, ``modelopt_class``): both build ``ModelOptNvFp4Config`` with its
    group of 16 (from_config's default, modelopt.py@0.10.1), so both weigh the same. Before, the file's spelling was
    "cannot predict: quant_method 'modelopt_fp4' is not modelled" and the flat one 1.07 GiB everywhere (fp16 scales
    and zero points per group of 128)."""
    got, flat = estimate("acme-corp/SmolLM2-NVFP4", version, gpu), estimate(FLAT_NVFP4, version, gpu)
    assert got.get("outcome") == flat.get("outcome") == "fits", (got, flat)
    assert got["weights_gib"] == flat["weights_gib"] == want, (got, flat)


def test_an_algorithm_the_release_does_not_map_is_refused_in_its_words(hub):
    refused = estimate("acme-corp/SmolLM2-fp8", "0.11.0")  # the exact text "FP8" only through 0.13.0
    assert refused.get("outcome") == "config_refused", refused
    assert refused["refusal"] and "Unknown ModelOpt quant algo: fp8" in json.dumps(refused["refusal"]), refused
    upper = estimate("acme-corp/SmolLM2-fp8", "0.14.0")  # upper-cased from 0.14.0
    assert upper.get("outcome") == "fits" and upper["weights_gib"] == FP8, upper


def test_a_modelopt_section_in_config_json_is_mapped_from_0_10_1(hub):
    mapped = estimate(IN_CONFIG, "0.10.2")
    assert mapped.get("outcome") == "fits" and mapped["weights_gib"] == FP8, mapped
    before = estimate(IN_CONFIG, "0.10.0")  # no mapping yet: "" is no method (quant_support)
    assert before.get("outcome") == "config_refused", before
