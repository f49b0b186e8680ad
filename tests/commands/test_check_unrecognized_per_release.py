"""`check` refuses an option the running release's own parser lacks, on every release read, not only on the three the
union table was read from (``cmdline.release_flags``, ``data/vllm_flags.json``): vLLM exits 2 with argparse's
``unrecognized arguments`` (or ``ambiguous option``) before any engine line, so the start is refused, and an option a
release has is accepted there even where the union table does not know it. Between two read releases the claim is an
inference: refused only when both neighbours lack the option."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge_cases
from fixtures.vllm_deployment import LLAMA, manifest

BOGUS = ("--bogus-flag", "1")
UNKNOWN = "it has no such flag (argparse: \"unrecognized arguments: {words}\""

#: (where, version, argv words after --max-model-len 4096): "args" of the image's own entrypoint, or a "command".
CASES = [
    *(("args", v, BOGUS) for v in ("0.9.2", "0.19.0", "0.28.0", "0.9.1")),
    ("command", "0.9.2", ("python3", "-m", "vllm.entrypoints.openai.api_server", "--model", LLAMA, *BOGUS)),
    ("command", "0.9.2", ("python3", "-m", "vllm.entrypoints.api_server", "--model", LLAMA, *BOGUS)),
    ("args", "0.9.1", ("--api-server-count", "1")),
    ("args", "0.9.1", ("--no-enforce-eager",)),
    # deprecated, still registered in 0.11.0 (a loop over literal tuples, type=bool), gone at 0.12.0
    *(("args", v, ("--guided-decoding-disable-fallback", "true")) for v in ("0.11.0", "0.12.0")),
    # EnableDisableAction (0.33.0): --enable-prefix-caching also registers --disable-prefix-caching
    *(("args", v, ("--disable-prefix-caching",)) for v in ("0.34.0", "0.32.0")),
    # an alias the union table knows, added in 0.31.0
    *(("args", v, ("--device-memory-utilization", "0.9")) for v in ("0.34.0", "0.11.0")),
    # a prefix unique in 0.9.2 (--max-num-seqs), ambiguous in 0.34.0 (--max-num-scheduled-tokens too)
    *(("args", v, ("--max-num-s", "8")) for v in ("0.9.2", "0.34.0")),
    ("args", "0.11.0", ("--enable-lor",)),
    # -dp arrived in 0.8.3
    *(("args", v, ("-dp", "1")) for v in ("0.8.0", "0.8.3")),
    # --enforce-eager is a bool dataclass field from 0.9.0 (BooleanOptionalAction), store_true in 0.8.5
    *(("args", v, ("--no-enforce-eager",)) for v in ("0.9.0", "0.8.5")),
]


def _workload(i: int, where: str, version: str, words: tuple[str, ...], tmp_path: Path) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, ["--max-model-len", "4096", *words],
                                       image=f"vllm/vllm-openai:v{version}")).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    if where == "command":
        container = doc["spec"]["template"]["spec"]["containers"][0]
        container.pop("args")
        container["command"] = [*words, "--max-model-len", "4096"]
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple, tuple[str, dict]]:
    """Every case as one Deployment of one file, judged by one real `check` run per output: (text, JSON item)."""
    tmp = tmp_path_factory.mktemp("per-release")
    return judge_cases(CASES, lambda i, key: _workload(i, *key, tmp), tmp)


def _refused(checked: dict, key: tuple, said: str) -> str:
    text, item = checked[key]
    assert item["status"] == "fail", text
    assert item["prediction"]["outcome"] == "argument_refused", item["prediction"]
    assert said in text, text
    return text


def _accepted(checked: dict, key: tuple) -> None:
    text, item = checked[key]
    assert "argument parsing" not in text, text
    assert item["prediction"]["outcome"] != "argument_refused", item["prediction"]


@pytest.mark.parametrize("version", ["0.9.2", "0.19.0", "0.28.0"])
def test_a_bogus_flag_is_refused_on_every_release_read(checked, version):
    _refused(checked, ("args", version, BOGUS), f"flags [error]: vLLM {version} refuses --bogus-flag at argument "
             f"parsing: {UNKNOWN.format(words='--bogus-flag 1')}")


def test_a_refusal_fails_the_check_run(cli, tmp_path):
    got = cli("check", "-f", manifest(tmp_path, ["--max-model-len", "4096", *BOGUS], image="vllm/vllm-openai:v0.19.0"))
    assert got.returncode == 1, got.stdout + got.stderr
    assert "refuses --bogus-flag at argument parsing" in got.stdout and "(exit 2: the pod never starts)" in got.stdout


def test_the_openai_api_server_module_shares_the_serve_parser_the_demo_server_does_not(checked):
    openai = ("python3", "-m", "vllm.entrypoints.openai.api_server", "--model", LLAMA, *BOGUS)
    _refused(checked, ("command", "0.9.2", openai), "vLLM 0.9.2 refuses --bogus-flag at argument parsing")
    demo = ("python3", "-m", "vllm.entrypoints.api_server", "--model", LLAMA, *BOGUS)
    assert "argument parsing" not in checked[("command", "0.9.2", demo)][0]


def test_between_two_read_releases_only_what_both_neighbours_lack_is_refused(checked):
    """0.9.1: 0.9.0 and 0.9.2 read; --api-server-count is in 0.9.2 only, so it may be in 0.9.1: not refused; both
    have --no-enforce-eager (booleans' hand-read lists carried 0.8.5's store_true to 0.9.1)."""
    _refused(checked, ("args", "0.9.1", BOGUS), "vLLM 0.9.1 refuses --bogus-flag at argument parsing")
    _accepted(checked, ("args", "0.9.1", ("--api-server-count", "1")))
    _accepted(checked, ("args", "0.9.1", ("--no-enforce-eager",)))


@pytest.mark.parametrize(("words", "has", "lacks"), [
    (("--guided-decoding-disable-fallback", "true"), "0.11.0", "0.12.0"),
    (("--disable-prefix-caching",), "0.34.0", "0.32.0"),
    (("--device-memory-utilization", "0.9"), "0.34.0", "0.11.0"),
    (("-dp", "1"), "0.8.3", "0.8.0"),
    (("--no-enforce-eager",), "0.9.0", "0.8.5"),
])
def test_a_flag_is_accepted_where_its_release_has_it_and_refused_where_not(checked, words, has, lacks):
    _accepted(checked, ("args", has, words))
    _refused(checked, ("args", lacks, words), f"vLLM {lacks} refuses {words[0]} at argument parsing")


def test_a_prefix_is_resolved_against_the_releases_own_options(checked):
    _accepted(checked, ("args", "0.9.2", ("--max-num-s", "8")))
    said = "ambiguous option: --max-num-s could match --max-num-scheduled-tokens, --max-num-seqs"
    _refused(checked, ("args", "0.34.0", ("--max-num-s", "8")), f"vLLM 0.34.0 refuses --max-num-s 8 at argument "
             f"parsing (argparse: \"{said}\")")
    _refused(checked, ("args", "0.11.0", ("--enable-lor",)),
             "(argparse: \"ambiguous option: --enable-lor could match --enable-lora, --enable-lora-bias\")")
