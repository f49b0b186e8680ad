"""`check` and `plan -f` on argv that the running release's argparse refuses (exit 2) although another release takes
it (hostile review, argv findings 1-3 and 5): an explicit value on a flag that takes none (``--enforce-eager=true``,
the space form's left-over ``true``), a --kv-cache-dtype outside that release's choices, a flag the release lacks.
A legacy StoreBoolean flag (``--enable-chunked-prefill False``, releases up to 0.8.3) still takes its value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge
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


LEFT_OVER = ("command", "0.8.5", ("vllm", "serve", LLAMA, "--max-model-len", "4096", "--enable-chunked-prefill",
                                   "False"))
STORE_BOOLEAN = [["--enable-chunked-prefill", "False"], ["--enable-chunked-prefill=false"],
                 ["--multi-step-stream-outputs", "true"]]
KV_DTYPES = ["bfloat16", "fp8_inc", "float16", "turboquant_3bit_nc"]

#: Every workload this module checks, as ("args" | "command", version, words), in one `check` run (``checked``).
CASES = [
    *(("args", version, ("--max-model-len", "4096", arg)) for version, arg, _ in EXPLICIT),
    ("command", "0.8.5", ("vllm", "serve", LLAMA, "--max-model-len", "4096", "--enforce-eager", "true")),
    *(("args", "0.7.3", ("--max-model-len", "4096", *args)) for args in STORE_BOOLEAN),
    LEFT_OVER,
    *(("args", "0.8.5", ("--max-model-len", "4096", "--kv-cache-dtype", dtype)) for dtype in KV_DTYPES),
    ("args", "0.11.0", ("--max-model-len", "4096", "--kv-cache-dtype", "fp8_inc")),
    ("args", "0.8.5", ("--max-model-len", "4096", "--kv-cache-memory-bytes", "4G")),
]


def _workload(i: int, where: str, version: str, words: tuple[str, ...], tmp_path: Path) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, list(words), image=f"vllm/vllm-openai:v{version}")).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    if where == "command":
        container = doc["spec"]["template"]["spec"]["containers"][0]
        container.pop("args")
        container["command"] = list(words)
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, tuple[str, ...]], tuple[str, dict]]:
    """Every check case of this module as one Deployment of one file, judged by one real `check` run per output
    (two CLI starts instead of two per case: the suite's time budget), keyed like ``CASES``: (text, JSON item)."""
    tmp = tmp_path_factory.mktemp("argparse")
    keys = list(dict.fromkeys(CASES))
    items, blocks = judge([_workload(i, *key, tmp) for i, key in enumerate(keys)], tmp, text=True)
    return {key: (blocks[f"case-{i}"], items[f"case-{i}"]) for i, key in enumerate(keys)}


def _check(checked: dict, key: tuple[str, str, tuple[str, ...]], refused: bool = True) -> tuple[str, dict]:
    """(text, JSON item) of one case; a refused one fails the check (the run's exit 1)."""
    text, item = checked[key]
    assert item["status"] == "fail" or not refused, text
    return text, item


def _command(tmp_path: Path, version: str, command: list[str]) -> str:
    path = Path(manifest(tmp_path, [], image=f"vllm/vllm-openai:v{version}"))
    doc = yaml.safe_load(path.read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container.pop("args")
    container["command"] = command
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize(("version", "arg", "said"), EXPLICIT)
def test_an_explicit_value_on_a_flag_that_takes_none_is_refused(checked, version, arg, said):
    text, item = _check(checked, ("args", version, ("--max-model-len", "4096", arg)))
    assert f"flags [error]: vLLM {version} refuses {arg} at argument parsing (argparse: \"{said}\")" in text, text
    assert item["prediction"]["outcome"] == "argument_refused", item["prediction"]


def test_the_space_forms_word_is_left_over_as_argparse_leaves_it(checked):
    text, item = _check(checked, ("command", "0.8.5", ("vllm", "serve", LLAMA, "--max-model-len", "4096",
                                                        "--enforce-eager", "true")))
    assert "refuses true at argument parsing (argparse: \"unrecognized arguments: true\")" in text, text
    assert item["prediction"]["outcome"] == "argument_refused"


@pytest.mark.parametrize("args", STORE_BOOLEAN)
def test_a_legacy_store_boolean_takes_its_value(checked, args):
    """StoreBoolean (nargs='?', utils.py@0.7.3): true/false as the next word or after `=`."""
    text, item = _check(checked, ("args", "0.7.3", ("--max-model-len", "4096", *args)), refused=False)
    assert "argument parsing" not in text, text
    assert item["prediction"]["outcome"] != "argument_refused"


def test_a_legacy_store_boolean_word_is_left_over_where_the_flag_takes_none(checked):
    text, _ = _check(checked, LEFT_OVER)
    assert "(argparse: \"unrecognized arguments: False\")" in text, text


KV_085 = "(choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')"


@pytest.mark.parametrize("dtype", KV_DTYPES)
def test_a_kv_cache_dtype_is_judged_against_the_running_releases_choices(checked, dtype):
    text, item = _check(checked, ("args", "0.8.5", ("--max-model-len", "4096", "--kv-cache-dtype", dtype)))
    said = f"argument --kv-cache-dtype: invalid choice: '{dtype}' {KV_085}"
    assert f"flags [error]: vLLM 0.8.5 refuses --kv-cache-dtype {dtype} at argument parsing (argparse: \"{said}\")" \
        in text, text
    assert item["prediction"]["outcome"] == "argument_refused"


def test_a_kv_cache_dtype_the_release_has_is_not_refused(checked):
    text, _ = _check(checked, ("args", "0.11.0", ("--max-model-len", "4096", "--kv-cache-dtype", "fp8_inc")),
                     refused=False)
    assert "argument parsing" not in text, text


def test_a_flag_the_release_lacks_is_refused_like_any_unknown_flag(checked):
    text, item = _check(checked, ("args", "0.8.5", ("--max-model-len", "4096", "--kv-cache-memory-bytes", "4G")))
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


def test_a_word_after_the_end_of_options_is_removed_not_unset(cli, tmp_path):
    """``… -- --foo``: after ``--`` argparse reads ``--foo`` as a positional it leaves over; the fix removes that word
    (there is no ``--foo`` option to unset), as for any stray word (hostile review 11)."""
    path = _command(tmp_path, "0.11.1", ["vllm", "serve", LLAMA, "--max-model-len", "4096", "--", "--foo"])
    text = cli("plan", "-f", path).stdout
    assert "remove the word --foo (planned without it)" in text and "unset --foo" not in text, text
    data = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    assert data["current"]["as_written"] == "argument_refused"
    assert all("foo" not in s["unset"] for s in data["steps"]), data["steps"]


def test_plan_removes_the_word_a_legacy_store_boolean_took(cli, tmp_path):
    path = _command(tmp_path, "0.8.5", ["vllm", "serve", LLAMA, "--max-model-len", "4096",
                                        "--enable-chunked-prefill", "False"])
    text = cli("plan", "-f", path).stdout
    assert "remove the word False (planned without it)" in text, text
    assert "--False" not in text, text


def test_a_refusal_no_flag_fixes_is_not_no_change_needed(cli, tmp_path):
    """``vllm serve --model M`` on 0.11.0 dies before argparse (exit 1) and only moving the model fixes it: plan said
    "no change needed" and exited 0 under a current line that says vLLM stops (hostile review 11)."""
    path = _command(tmp_path, "0.11.0", ["vllm", "serve", "--model", LLAMA, "--max-model-len", "4096"])
    got = cli("plan", "-f", path)
    assert got.returncode == 1, got.stdout
    assert "(exit 1), nothing is loaded" in got.stdout and "no change needed" not in got.stdout, got.stdout
    assert json.loads(cli("plan", "-f", path, "-o", "json").stdout)["verdict"] == "refused_as_written"
