"""A rehearsal pod whose argv gives a boolean flag a word ends as real vLLM does (hostile review, argv finding 1):
``--enforce-eager true`` leaves ``true`` over (store_true, engine/arg_utils.py@0.8.5), exit 2 ``unrecognized
arguments: true``; the legacy StoreBoolean ``--enable-chunked-prefill False`` takes its word in 0.7.3. A
--kv-cache-dtype the release lacks is refused by that release's choices: fp8_inc is in config/cache.py@0.10.2, not
config.py@0.9.2."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal

from .test_argv_shape_refusal import LLAMA, judge, stderr


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.8.5", [LLAMA, "--enforce-eager", "true"], "unrecognized arguments: true"),
    ("v0.11.0", [LLAMA, "--max-model-len", "4096", "--trust-remote-code", "false"], "unrecognized arguments: false"),
    ("v0.9.2", [LLAMA, "--kv-cache-dtype", "fp8_inc"],
     "argument --kv-cache-dtype: invalid choice: 'fp8_inc' (choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')"),
])
def test_the_release_refuses_the_word(tag: str, args: list[str], error: str) -> None:
    assert stderr(judge(tag, *args))[-1] == f"vllm serve: error: {error}"


def test_a_legacy_store_boolean_takes_its_word() -> None:
    got = judge("v0.7.3", LLAMA, "--max-model-len", "4096", "--enable-chunked-prefill", "False")
    assert not (isinstance(got, Refusal) and got.stage == "argparse"), got
    assert isinstance(got, Launch | Refusal)
