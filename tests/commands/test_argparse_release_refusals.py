"""`check` and `plan -f` on argv that the running release's argparse refuses (exit 2) although another release takes
it (hostile review, argv findings 1-3 and 5): an explicit value on a flag that takes none (``--enforce-eager=true``,
the space form's left-over ``true``), a --kv-cache-dtype outside that release's choices, a flag the release lacks.
A legacy StoreBoolean flag (``--enable-chunked-prefill False``, releases up to 0.8.3) still takes its value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import LLAMA, manifest

IGNORED = "ignored explicit argument"
EXPLICIT = [
    ("0.8.5", "--enforce-eager=true", f"argument --enforce-eager: {IGNORED} 'true'"),
    ("0.8.5", "--enforce-eager=false", f"argument --enforce-eager: {IGNORED} 'false'"),
    ("0.8.5", "--enable-prefix-caching=true",
     f"argument --enable-prefix-caching/--no-enable-prefix-caching: {IGNORED} 'true'"),
    ("0.8.5", "--disable-log-stats=true", f"argument --disable-log-stats: {IGNORED} 'true'"),
    ("0.8.5", "--trust-remote-code=1", f"argument --trust-remote-code: {IGNORED} '1'"),
    ("0.8.5", "--enable-chunked-prefill=False",
     f"argument --enable-chunked-prefill/--no-enable-chunked-prefill: {IGNORED} 'False'"),
    ("0.11.0", "--enforce-eager=true", f"argument --enforce-eager/--no-enforce-eager: {IGNORED} 'true'"),
    ("0.11.0", "--no-enforce-eager=1", f"argument --enforce-eager/--no-enforce-eager: {IGNORED} '1'"),
    ("0.34.0", "--disable-log-stats=true", f"argument --disable-log-stats: {IGNORED} 'true'"),
]


def _check(cli, tmp_path: Path, path: str, refused: bool = True) -> tuple[str, dict]:
    text = cli("check", "-f", path)
    got = cli("check", "-f", path, "-o", "json")
    assert got.returncode in ((1,) if refused else (0, 1)), got.stdout + got.stderr
    return text.stdout, json.loads(got.stdout)["items"][0]


def _command(tmp_path: Path, version: str, command: list[str]) -> str:
    path = Path(manifest(tmp_path, [], image=f"vllm/vllm-openai:v{version}"))
    doc = yaml.safe_load(path.read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container.pop("args")
    container["command"] = command
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize(("version", "arg", "said"), EXPLICIT)
def test_an_explicit_value_on_a_flag_that_takes_none_is_refused(cli, tmp_path, version, arg, said):
    text, item = _check(cli, tmp_path, manifest(tmp_path, ["--max-model-len", "4096", arg],
                                                 image=f"vllm/vllm-openai:v{version}"))
    assert f"flags [error]: vLLM {version} refuses {arg} at argument parsing (argparse: \"{said}\")" in text, text
    assert item["prediction"]["outcome"] == "argument_refused", item["prediction"]


def test_the_space_forms_word_is_left_over_as_argparse_leaves_it(cli, tmp_path):
    path = _command(tmp_path, "0.8.5", ["vllm", "serve", LLAMA, "--max-model-len", "4096", "--enforce-eager", "true"])
    text, item = _check(cli, tmp_path, path)
    assert "refuses true at argument parsing (argparse: \"unrecognized arguments: true\")" in text, text
    assert item["prediction"]["outcome"] == "argument_refused"


@pytest.mark.parametrize("args", [["--enable-chunked-prefill", "False"], ["--enable-chunked-prefill=false"],
                                  ["--multi-step-stream-outputs", "true"]])
def test_a_legacy_store_boolean_takes_its_value(cli, tmp_path, args):
    """StoreBoolean (nargs='?', utils.py@0.7.3): true/false as the next word or after `=`."""
    text, item = _check(cli, tmp_path, manifest(tmp_path, ["--max-model-len", "4096", *args],
                                                 image="vllm/vllm-openai:v0.7.3"), refused=False)
    assert "argument parsing" not in text, text
    assert item["prediction"]["outcome"] != "argument_refused"


def test_a_legacy_store_boolean_word_is_left_over_where_the_flag_takes_none(cli, tmp_path):
    path = _command(tmp_path, "0.8.5", ["vllm", "serve", LLAMA, "--max-model-len", "4096",
                                        "--enable-chunked-prefill", "False"])
    text, _ = _check(cli, tmp_path, path)
    assert "(argparse: \"unrecognized arguments: False\")" in text, text


KV_085 = "(choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')"


@pytest.mark.parametrize("dtype", ["bfloat16", "fp8_inc", "float16", "turboquant_3bit_nc"])
def test_a_kv_cache_dtype_is_judged_against_the_running_releases_choices(cli, tmp_path, dtype):
    text, item = _check(cli, tmp_path, manifest(tmp_path, ["--max-model-len", "4096", "--kv-cache-dtype", dtype],
                                                 image="vllm/vllm-openai:v0.8.5"))
    said = f"argument --kv-cache-dtype: invalid choice: '{dtype}' {KV_085}"
    assert f"flags [error]: vLLM 0.8.5 refuses --kv-cache-dtype {dtype} at argument parsing (argparse: \"{said}\")" \
        in text, text
    assert item["prediction"]["outcome"] == "argument_refused"


def test_a_kv_cache_dtype_the_release_has_is_not_refused(cli, tmp_path):
    text, _ = _check(cli, tmp_path, manifest(tmp_path, ["--max-model-len", "4096", "--kv-cache-dtype", "fp8_inc"],
                                              image="vllm/vllm-openai:v0.11.0"), refused=False)
    assert "argument parsing" not in text, text


def test_a_flag_the_release_lacks_is_refused_like_any_unknown_flag(cli, tmp_path):
    text, item = _check(cli, tmp_path, manifest(tmp_path, ["--max-model-len", "4096", "--kv-cache-memory-bytes", "4G"],
                                                 image="vllm/vllm-openai:v0.8.5"))
    assert "flags [error]: vLLM 0.8.5 refuses --kv-cache-memory-bytes at argument parsing" in text, text
    assert "flags [unknown]" not in text, text
    assert item["prediction"]["outcome"] == "argument_refused"


@pytest.mark.parametrize(("args", "said"), [
    (["--kv-cache-dtype", "fp9"], "argument --kv-cache-dtype: invalid choice: 'fp9'"),
    (["--max-num-batched-tokens"], "argument --max-num-batched-tokens: expected one argument"),
    (["--enforce-eager=true"], f"argument --enforce-eager/--no-enforce-eager: {IGNORED} 'true'"),
])
def test_plan_reads_an_argparse_refusal_as_check_does(cli, tmp_path, args, said):
    path = manifest(tmp_path, ["--max-model-len", "4096", *args])
    got = cli("plan", "-f", path)
    assert "vllm-remedy: error" not in got.stderr, got.stderr
    assert said in got.stdout, got.stdout
    data = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    assert data["current"]["as_written"] == "argument_refused"


def test_plan_removes_a_stray_word_not_a_flag_of_that_name(cli, tmp_path):
    """``vllm serve M extra``: argparse leaves ``extra`` over; the fix is removing the word (no ``--extra`` exists)."""
    path = _command(tmp_path, "0.11.0", ["vllm", "serve", LLAMA, "extra", "--max-model-len", "4096"])
    text = cli("plan", "-f", path).stdout
    assert "remove the word extra (planned without it)" in text, text
    assert "--extra" not in text, text
    data = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    assert data["current"]["as_written"] == "argument_refused"
    assert all("extra" not in s["unset"] for s in data["steps"]), data["steps"]


def test_plan_removes_the_word_a_legacy_store_boolean_took(cli, tmp_path):
    path = _command(tmp_path, "0.8.5", ["vllm", "serve", LLAMA, "--max-model-len", "4096",
                                        "--enable-chunked-prefill", "False"])
    text = cli("plan", "-f", path).stdout
    assert "remove the word False (planned without it)" in text, text
    assert "--False" not in text, text
