"""`check` never asserts that --max-model-len is missing when an argument taken from a variable may carry it (hostile
review 15b, addendum to F14): `sh -c 'ARGS="--max-model-len 131072"; exec vllm serve M $ARGS'` used to print both
"flags [unknown]: ... an argument taken from a variable may carry flags" and "max-model-len [error]: --max-model-len
is not set" — here it *is* set. A flag the tool cannot see is unknown, never an error. Real CLI, one run."""

from __future__ import annotations

from pathlib import Path

from fixtures.check_batch import judge, l40s_deployment

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
IMAGE = "vllm/vllm-openai:v0.11.0"


def test_a_variable_that_may_carry_max_model_len_makes_it_unknown_not_an_error(tmp_path: Path) -> None:
    hidden = l40s_deployment("hidden", IMAGE, [f'ARGS="--max-model-len 131072"; exec vllm serve {LLAMA} $ARGS'],
                             ["sh", "-c"])
    plain = l40s_deployment("plain", IMAGE, [f"exec vllm serve {LLAMA}"], ["sh", "-c"])
    items, texts = judge([hidden, plain], tmp_path, text=True)
    found = {f["check"]: f for f in items["hidden"]["findings"]}
    assert found["max-model-len"]["severity"] == "unknown", found
    assert "$ARGS" in found["max-model-len"]["reason"], found["max-model-len"]
    assert "max-model-len [error]" not in texts["hidden"], texts["hidden"]
    assert "is not set" not in texts["hidden"], texts["hidden"]
    # nothing hides it: still the policy's error
    plain_found = {f["check"]: f for f in items["plain"]["findings"]}
    assert plain_found["max-model-len"]["severity"] == "error", plain_found
