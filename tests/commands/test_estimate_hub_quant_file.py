"""`estimate --model` for a ModelOpt checkpoint exported by ModelOpt 0.29 or earlier, whose scheme is in
``hf_quant_config.json`` beside a config.json without ``quantization_config`` (NVIDIA's older ``*-FP8`` repositories),
through the real CLI against a Hub-compatible server (HF_ENDPOINT, never the real Hub). vLLM reads that file as the
config's ``quantization_config`` (transformers_utils/config.py@0.10.1 on, @0.30.0 l.829-841); before, the tool never
asked for it and sized the checkpoint's weights as 16-bit without a word."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, Repo, hub_server

NV_FP8 = "acme-corp/SmolLM2-NV-FP8"
MODELOPT = {"producer": {"name": "modelopt", "version": "0.27.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
BF16 = 3.29  # SmolLM2-1.7B's weights at 16 bits (GiB), what the tool printed before


def estimate(url: str, home: Path) -> tuple[int, str, str]:
    saved = dict(os.environ)
    os.environ.update({"HF_ENDPOINT": url, "HF_HOME": str(home), "HF_HUB_OFFLINE": "0"})
    try:
        got = run_cli("estimate", "--model", NV_FP8, "--gpu", "NVIDIA-L4", "--max-model-len", "8192",
                      "--vllm-version", "0.30.0", "-o", "json")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return got.returncode, got.stdout, got.stderr


def test_the_separate_quant_file_is_fetched_once_and_read(tmp_path):
    with hub_server({NV_FP8: Repo({"config.json": SMOLLM2_CONFIG, "hf_quant_config.json": MODELOPT})}) as hub:
        first = estimate(hub.url, tmp_path)
        again = estimate(hub.url, tmp_path)
    fetched = [r for r in hub.requests if "/resolve/" in r[1]]
    assert fetched == [("GET", f"/{NV_FP8}/resolve/main/config.json"),
                       ("GET", f"/{NV_FP8}/resolve/main/hf_quant_config.json"),  # one GET, then the cache's copy
                       ("HEAD", f"/{NV_FP8}/resolve/main/config.json")], fetched
    for code, out, err in (first, again):  # never again the 16-bit weights as if the checkpoint stated nothing
        assert not (code == 0 and json.loads(out)["weights_gib"] == BF16), out + err
