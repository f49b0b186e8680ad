"""`check` reads how many words an option takes, and how argparse names it, from the running release's own parser
(``data/vllm_flags.json``: ``nargs``, ``shown``, ``order``, generated from vLLM's source), not from the union table:

* ``--disable-prefix-caching`` (0.33.0+, EnableDisableAction's inverse of ``--enable-prefix-caching``) takes no
  value, so ``vllm serve --disable-prefix-caching <model>`` still serves ``<model>``;
* ``--collect-detailed-traces`` was one word (``type=str``) to 0.8.5, a list from 0.9.0; ``--long-lora-scaling-
  factors`` a ``tuple[float, ...]`` (nargs='+') from 0.8.5 to 0.9.2: a second word is a stray positional, or not;
* a value on a boolean flag is refused with the action's option strings as that release has them: ``--enforce-eager/
  --no-enforce-eager`` from 0.9.0, ``--enable-prefix-caching`` alone (store_true) to 0.6.4,
  ``--enable-prefix-caching/--disable-prefix-caching`` from 0.33.0;
* an unknown ``--bogus_flag`` is printed as argparse prints it, ``--bogus-flag`` (``FlexibleArgumentParser.
  parse_args`` rewrites ``_`` to ``-`` in every release read);
* an ambiguous prefix's matches are listed in the release's registration order, as argparse lists them;
* a flag given no value is named with every option string of its action (``--tensor-parallel-size/-tp``);
* an inverse sets its flag false: 0.34.0's ``--disable-chunked-prefill`` is sized as ``--no-enable-chunked-prefill``
  (the batch then holds a whole --max-model-len prompt: more activation memory, less KV cache)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge_cases
from fixtures.vllm_deployment import LLAMA, manifest

#: (version, command after the image's entrypoint is replaced: ``vllm serve ...``, without --max-model-len)
CASES = [
    ("0.34.0", ("--disable-prefix-caching", LLAMA)),
    ("0.35.0", ("--disable-prefix-caching", LLAMA)),
    ("0.8.5", (LLAMA, "--collect-detailed-traces", "model", "worker")),
    ("0.9.0", (LLAMA, "--collect-detailed-traces", "model", "worker")),
    ("0.9.2", (LLAMA, "--long-lora-scaling-factors", "4.0", "8.0")),
    ("0.9.0", (LLAMA, "--enforce-eager=true")),
    ("0.6.0", (LLAMA, "--enable-prefix-caching=true")),
    ("0.34.0", (LLAMA, "--enable-prefix-caching=true")),
    ("0.19.0", (LLAMA, "--bogus_flag", "1")),
    ("0.34.0", (LLAMA, "--enable-p")),
    ("0.34.0", (LLAMA,)),
    ("0.34.0", (LLAMA, "--disable-chunked-prefill")),
    ("0.34.0", (LLAMA, "--no-enable-chunked-prefill")),
    ("0.19.0", (LLAMA, "-tp")),
    ("0.34.0", (LLAMA, "--gpu-memory-utilization")),
]


def _workload(i: int, version: str, words: tuple[str, ...], tmp_path: Path) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], image=f"vllm/vllm-openai:v{version}")).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container.pop("args")
    container["command"] = ["vllm", "serve", *words, "--max-model-len", "4096"]
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple, tuple[str, dict]]:
    """Every case as one Deployment of one file, judged by one real `check` run per output: (text, JSON item)."""
    tmp = tmp_path_factory.mktemp("arity")
    return judge_cases(CASES, lambda i, key: _workload(i, *key, tmp), tmp)


def _refused(checked: dict, key: tuple, said: str) -> None:
    text, item = checked[key]
    assert item["prediction"]["outcome"] == "argument_refused", text
    assert said in text, text


def _accepted(checked: dict, key: tuple) -> str:
    text, item = checked[key]
    assert "argument parsing" not in text, text
    assert item["prediction"]["outcome"] != "argument_refused", item["prediction"]
    return text


@pytest.mark.parametrize("version", ["0.34.0", "0.35.0"])  # newer than read: the newest release read's words
def test_an_enable_disable_inverse_takes_no_value_so_the_model_after_it_is_served(checked, version):
    text = _accepted(checked, (version, ("--disable-prefix-caching", LLAMA)))
    estimate = checked[(version, ("--disable-prefix-caching", LLAMA))][1]["prediction"]["estimate"]
    assert "names no model" not in text and estimate["weights_gib"] > 14, text  # Llama 3.1 8B's bf16 weights


def test_an_inverse_is_read_as_the_negated_flag_it_sets(checked):
    def estimate(*words: str) -> dict:
        text, item = checked[("0.34.0", (LLAMA, *words))]
        assert "argument parsing" not in text, text
        return item["prediction"]["estimate"]

    disabled, plain = estimate("--disable-chunked-prefill"), estimate()
    assert disabled == estimate("--no-enable-chunked-prefill")
    assert disabled["activation_gib"] > plain["activation_gib"]
    assert disabled["kv_cache_tokens"] < plain["kv_cache_tokens"]


def test_a_flag_takes_as_many_words_as_its_release_gives_it(checked):
    traces = (LLAMA, "--collect-detailed-traces", "model", "worker")
    _refused(checked, ("0.8.5", traces), 'argparse: "unrecognized arguments: worker"')
    _accepted(checked, ("0.9.0", traces))
    _accepted(checked, ("0.9.2", (LLAMA, "--long-lora-scaling-factors", "4.0", "8.0")))


@pytest.mark.parametrize(("version", "words", "shown"), [
    ("0.9.0", (LLAMA, "--enforce-eager=true"), "--enforce-eager/--no-enforce-eager"),
    ("0.6.0", (LLAMA, "--enable-prefix-caching=true"), "--enable-prefix-caching"),
    ("0.34.0", (LLAMA, "--enable-prefix-caching=true"), "--enable-prefix-caching/--disable-prefix-caching"),
])
def test_a_value_on_a_boolean_names_the_releases_own_option_strings(checked, version, words, shown):
    _refused(checked, (version, words), f'argparse: "argument {shown}: ignored explicit argument \'true\'"')


def test_an_unknown_underscore_option_is_printed_as_argparse_sees_it(checked):
    _refused(checked, ("0.19.0", (LLAMA, "--bogus_flag", "1")),
             'argparse: "unrecognized arguments: --bogus-flag 1"')


def test_an_ambiguous_prefix_lists_its_matches_in_registration_order(checked):
    said = ("ambiguous option: --enable-p could match --enable-prompt-tokens-details, --enable-per-request-metrics, "
            "--enable-prompt-embeds, --enable-prefix-caching")
    _refused(checked, ("0.34.0", (LLAMA, "--enable-p")), said)


@pytest.mark.parametrize(("version", "words", "names"), [
    ("0.19.0", (LLAMA, "-tp"), "--tensor-parallel-size/-tp"),
    ("0.34.0", (LLAMA, "--gpu-memory-utilization"), "--gpu-memory-utilization/--device-memory-utilization"),
])
def test_a_flag_without_its_value_is_named_with_all_its_option_strings(checked, version, words, names):
    _refused(checked, (version, words), f'argparse: "argument {names}: expected one argument"')
