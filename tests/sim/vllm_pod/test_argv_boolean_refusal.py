"""A rehearsal pod whose argv gives a boolean flag a word ends as real vLLM does (hostile review, argv finding 1):
``--enforce-eager true`` leaves ``true`` over (store_true, engine/arg_utils.py@0.8.5), exit 2 ``unrecognized
arguments: true``; the legacy StoreBoolean ``--enable-chunked-prefill False`` takes its word in 0.7.3. A
--kv-cache-dtype the release lacks is refused by that release's choices: fp8_inc is in config/cache.py@0.10.2, not
config.py@0.9.2."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.vllm_pod import argv
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal

from .test_argv_shape_refusal import LLAMA, judge, stderr


@pytest.mark.parametrize(("tag", "args", "error"), [
    ("v0.8.5", [LLAMA, "--enforce-eager", "true"], "unrecognized arguments: true"),
    ("v0.11.0", [LLAMA, "--max-model-len", "4096", "--trust-remote-code", "false"], "unrecognized arguments: false"),
    ("v0.9.2", [LLAMA, "--kv-cache-dtype", "fp8_inc"],
     "argument --kv-cache-dtype: invalid choice: 'fp8_inc' (choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')"),
])
def test_the_release_refuses_the_word(tag: str, args: list[str], error: str) -> None:
    prog = "vllm" if error.startswith("unrecognized arguments") else "vllm serve"  # leftovers: the top parser's
    assert stderr(judge(tag, *args))[-1] == f"{prog}: error: {error}"


def test_a_legacy_store_boolean_takes_its_word() -> None:
    got = judge("v0.7.3", LLAMA, "--max-model-len", "4096", "--enable-chunked-prefill", "False")
    assert not (isinstance(got, Refusal) and got.stage == "argparse"), got
    assert isinstance(got, Launch | Refusal)


@pytest.mark.parametrize(("flag", "text", "version", "error"), [
    ("enforce-eager", "true", (0, 8, 5), "argument --enforce-eager: ignored explicit argument 'true'"),
    ("enforce-eager", "true", (0, 11, 0),
     "argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'true'"),
    ("enable-prefix-caching", "1", (0, 8, 5),
     "argument --enable-prefix-caching/--no-enable-prefix-caching: ignored explicit argument '1'"),
    ("disable-log-stats", "true", (0, 34, 0), "argument --disable-log-stats: ignored explicit argument 'true'"),
    ("enable-chunked-prefill", "false", (0, 7, 3), None),
])
def test_the_parser_refuses_a_value_after_equals_on_a_boolean(flag: str, text: str, version: tuple[int, int, int],
                                                              error: str | None) -> None:
    """``argv.first_error``'s ``booleans`` (the pod's argparse; the launch passes the `=` forms it reads)."""
    got = argv.first_error([], version, booleans=[(flag, text)])
    assert (got.message if got else None) == error


@pytest.mark.parametrize(("tag", "args", "command", "error"), [
    ("v0.11.0", [LLAMA, "--enforce-eager=true"], None,
     "argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'true'"),
    ("v0.8.5", [LLAMA, "--max-model-len", "4096", "--enable-prefix-caching=true"], None,
     "argument --enable-prefix-caching/--no-enable-prefix-caching: ignored explicit argument 'true'"),
    ("v0.11.0", [f"exec vllm serve {LLAMA} --enforce-eager=false"], ["/bin/sh", "-c"],
     "argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'false'"),
])
def test_the_pod_refuses_an_explicit_value_on_a_boolean(tag: str, args: list[str], command: list[str] | None,
                                                       error: str) -> None:
    """Helm often renders `--flag=true`: the pod exits 2 as vLLM does, it does not start."""
    assert stderr(judge(tag, *args, command=command))[-1] == f"vllm serve: error: {error}"


def test_a_bare_boolean_still_starts() -> None:
    got = judge("v0.11.0", LLAMA, "--max-model-len", "4096", "--enforce-eager")
    assert not (isinstance(got, Refusal) and got.stage == "argparse"), got
