"""Numeric engine and GPU flags that are not a usable number: one argparse usage line and exit 2, never a traceback.

``nan`` / ``inf`` crashed the integer MiB conversion, and a near-zero GPU or a 20-digit token count scaled the
memory bar until it exhausted memory (MemoryError).
"""

from __future__ import annotations

import argparse

import pytest

from vllm_remedy.commands import _engine_args as ea

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Refused(message)


def _parse(*argv: str) -> argparse.Namespace:
    parser = _Parser()
    ea.add_model_gpu(parser)
    ea.add_engine_flags(parser)
    return parser.parse_args(["--model", LLAMA, *argv])


@pytest.mark.parametrize(("argv", "message"), [
    (("--gpu-memory-gib", "nan"), "argument --gpu-memory-gib: 'nan' is not a finite number"),
    (("--gpu-memory-gib", "inf"), "argument --gpu-memory-gib: 'inf' is not a finite number"),
    (("--gpu-memory-gib=-inf",), "argument --gpu-memory-gib: '-inf' is not a finite number"),
    (("--gpu-memory-gib", "lots"), "argument --gpu-memory-gib: 'lots' is not a number"),
    (("--gpu-memory-gib", "1e-9"), "argument --gpu-memory-gib: 1e-9 is out of range; expected 1 <= N <= 4096 GiB"),
    (("--gpu-memory-gib", "0"), "argument --gpu-memory-gib: 0 is out of range; expected 1 <= N <= 4096 GiB"),
    (("--gpu-memory-gib", "5000"), "argument --gpu-memory-gib: 5000 is out of range; expected 1 <= N <= 4096 GiB"),
    (("--gpu", "NVIDIA-L4", "--max-num-batched-tokens", "99999999999999999999"),
     "argument --max-num-batched-tokens: 99999999999999999999 is out of range; expected 1 <= N <= 2147483647"),
    (("--gpu", "NVIDIA-L4", "--max-num-seqs", "2147483648"),
     "argument --max-num-seqs: 2147483648 is out of range; expected 1 <= N <= 2147483647"),
    (("--gpu", "NVIDIA-L4", "--tp", "99999999999999999999"),
     "argument --tp/--tensor-parallel-size: 99999999999999999999 is out of range; expected 1 <= N <= 2147483647"),
    (("--gpu", "NVIDIA-L4", "--max-model-len", "99999999999999999999"),
     "argument --max-model-len: 99999999999999999999 is out of range; expected 1 <= N <= 2147483647 (or auto)"),
    (("--gpu", "NVIDIA-L4", "--gpu-memory-utilization", "nan"),
     "argument --gpu-memory-utilization: 'nan' is not a finite number"),
    (("--gpu", "NVIDIA-L4", "--gpu-memory-utilization", "1e400"),
     "argument --gpu-memory-utilization: '1e400' is not a finite number"),
    (("--gpu", "NVIDIA-L4", "--other-gib", "inf"), "argument --other-gib: 'inf' is not a finite number"),
    (("--gpu", "NVIDIA-L4", "--other-gib", "1e300"),
     "argument --other-gib: 1e300 is out of range; expected 0 <= N <= 4096 GiB"),
])
def test_unusable_numbers_are_refused_by_the_parser(argv, message):
    with pytest.raises(_Refused) as refused:
        _parse(*argv)
    assert str(refused.value) == message


def test_usable_numbers_pass_unchanged():
    args = _parse("--gpu-memory-gib", "4096", "--max-model-len", "16k", "--max-num-batched-tokens", "2147483647",
                  "--gpu-memory-utilization", "1", "--other-gib", "0", "--tp", "2")
    assert (args.gpu_memory_gib, args.max_model_len, args.max_num_batched_tokens) == (4096.0, "16k", "2147483647")
    assert ea.model_inputs(args)["other-process-gib"] == "0.0"
    assert _parse("--gpu-memory-gib", "1", "--max-model-len", "auto").max_model_len == "auto"


@pytest.mark.parametrize("command", ["estimate", "plan"])
@pytest.mark.parametrize(("argv", "message"), [
    (("--gpu-memory-gib", "nan"), "argument --gpu-memory-gib: 'nan' is not a finite number"),
    (("--gpu-memory-gib", "inf"), "argument --gpu-memory-gib: 'inf' is not a finite number"),
    (("--gpu-memory-gib", "1e-9"), "argument --gpu-memory-gib: 1e-9 is out of range; expected 1 <= N <= 4096 GiB"),
    (("--gpu", "NVIDIA-L4", "--max-num-batched-tokens", "99999999999999999999"),
     "argument --max-num-batched-tokens: 99999999999999999999 is out of range; expected 1 <= N <= 2147483647"),
])
def test_the_reviewers_crashes_are_one_line_exit_2(cli, command, argv, message):
    got = cli(command, "--model", LLAMA, *argv)
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"vllm-remedy {command}: error: {message}\n")


def test_lower_bounds_keep_the_wording_a_manifest_gets(cli):
    """Zero and negative values are EngineSettings' to refuse, worded as for the same flag in a manifest."""
    got = cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--max-num-batched-tokens", "0")
    assert (got.returncode, got.stderr) == (
        2, "vllm-remedy: error: max-num-batched-tokens: 0 must be a positive integer\n")
