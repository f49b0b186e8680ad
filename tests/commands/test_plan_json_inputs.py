"""`plan -o json` echoes its inputs as estimate's JSON does (review 4, M7): the flags as given, the version as typed
and as every output prints it, and the memory model's own inputs."""

from __future__ import annotations

import json

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def test_plan_json_echoes_flags_and_version_like_estimate(cli):
    args = ("--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.11", "--max-model-len", "8k", "-o", "json")
    plan = json.loads(cli("plan", *args).stdout)
    est = json.loads(cli("estimate", *args).stdout)
    for key in ("vllm_version", "vllm_version_label", "revision", "p2p", "compile_cache", "other_gib",
                "allow_long_max_model_len", "image_max_pixels"):
        assert plan[key] == est[key], key
    assert plan["flags"] == {"max-model-len": "8k"} and plan["vllm_version"] == "0.11"  # as given (no defaults)
    assert est["flags"]["max-model-len"] == "8k"
