"""The game-day predictions table on vllm/vllm-openai:v0.35.0 with an option no vLLM release read had: the row's
prediction says "not judged" of it after the extrapolated rules, in check's words (``cmdline.unrecognized.note``),
and its JSON lists it (``not_judged``), as the deploys and drift do; it used to name the rules only. The report's
markdown and HTML print the row's prediction as it is (``gameday.report``)."""

from __future__ import annotations

from typing import Any

from vllm_remedy.gameday.predict import compare, predict_pod

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
NODE = {"metadata": {"name": "gpu-l40s-3", "labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}
RULES = "vLLM 0.35.0: rules extrapolated from 0.34.0"
NOTE = ("not judged: --foo-bar is not an option of vLLM 0.34.0, the newest release read; 0.35.0 may accept it (a "
        "rehearsal pod starts with it, its effect not modelled)")


def spec(image: str, *extra: str) -> dict[str, Any]:
    return {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
            "containers": [{"name": "vllm", "image": image, "command": ["vllm", "serve"],
                            "args": [LLAMA, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90", *extra],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}


def test_the_row_says_it_after_the_rules() -> None:
    outcome, detail = predict_pod(spec("vllm/vllm-openai:v0.35.0", "--foo-bar", "1"), NODE, "vllm")
    assert outcome == "fits" and detail.endswith(f"; {RULES}; {NOTE}"), detail
    [row] = compare({"p": {"node": "gpu-l40s-3", "spec": spec("vllm/vllm-openai:v0.35.0", "--foo-bar", "1"),
                           "ready": True}}, {"gpu-l40s-3": NODE}, [], "vllm")
    assert row["not_judged"] == [NOTE] and row["prediction"] == detail, row


def test_without_such_an_option_nothing_is_said() -> None:
    _outcome, detail = predict_pod(spec("vllm/vllm-openai:v0.35.0"), NODE, "vllm")
    assert detail.endswith(RULES) and "not judged" not in detail, detail
    [row] = compare({"p": {"node": "gpu-l40s-3", "spec": spec("vllm/vllm-openai:v0.34.0"), "ready": True}},
                    {"gpu-l40s-3": NODE}, [], "vllm")
    assert row["not_judged"] == [] and "not judged" not in row["prediction"], row
