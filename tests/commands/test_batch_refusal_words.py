"""The batched-tokens refusal in vLLM's words (``vllm.batch_words``): ``estimate``'s outcome line and JSON ``refusal``,
``check``'s start finding, with the release's exception (V0's ValueError; pydantic's ValidationError for
SchedulerConfig from 0.9.1) and the figures vLLM prints, not just the class name."""

from __future__ import annotations

import json

import pytest

from fixtures.vllm_deployment import manifest

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
WORDS = "max_num_batched_tokens (8192) is smaller than max_model_len (16384)."


def test_estimate_v0_names_the_refusal(cli):
    base = ["estimate", "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--max-model-len", "16384",
            "--max-num-batched-tokens", "8192", "--vllm-version", "0.6.3"]
    got = cli(*base, "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["outcome"] == "config_refused"
    assert data["refusal"] == (
        f"ValueError: {WORDS} This effectively limits the maximum sequence length to max_num_batched_tokens and "
        "makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")
    human = cli(*base)
    assert f"outcome             config_refused: ValueError: {WORDS}" in human.stdout, human.stdout


@pytest.mark.parametrize(("tag", "exception"), [("v0.6.3", "ValueError: "),
                                                ("v0.34.0", "ValidationError for SchedulerConfig: ")])
def test_check_names_the_refusal(cli, tmp_path, tag, exception):
    args = ["--max-model-len", "16384", "--max-num-batched-tokens", "8192"]
    if tag != "v0.6.3":
        args.append("--no-enable-chunked-prefill")
    out = cli("check", "-f", manifest(tmp_path, args, image=f"vllm/vllm-openai:{tag}", model=LLAMA))
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"predicted config_refused on NVIDIA-L40S — vLLM refuses the start at config time: {exception}{WORDS}" \
        in out.stdout, out.stdout
    assert "[type=value_error" not in out.stdout
