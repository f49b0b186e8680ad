"""A rehearsal pod given a long option its release's parser does not have refuses it as real vLLM does, through the
served rehearsal cluster and the official ``kubernetes`` client: argparse leaves the words over and ends with
``vllm: error: unrecognized arguments: --bogus-flag 1`` (``vllm serve``'s sub-parser collects the leftovers, the
top-level ``vllm`` parser refuses them under its own usage; ``api_server.py: error: ...`` for the module), exit 2,
no engine line. The pod used to start with any option it had no rule for (``--bogus-flag 1`` on 0.9.2 and 0.28.0),
and with a dotted ``--hf-overrides.KEY V`` before 0.9.0, whose FlexibleArgumentParser does not fold dotted keys yet
(utils.py@0.8.5 only turns underscores into dashes; @0.9.0 folds ``--x.k v`` into ``--x <json>``). The options come
from the rehearsal's own table of every release's option strings (``argv_options``, vllm_options.json)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from fixtures.served_pods import run, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
SERVE = ["vllm", "serve"]
MODULE = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
USAGE = "usage: vllm serve [model_tag] [options]"
#: the top-level parser's usage (entrypoints/cli/main.py@0.9.2 and @0.28.0: -v and six or seven sub-commands)
TOP = {"v0.8.5": ["usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env} ..."],
       "v0.9.2": ["usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."],
       "v0.28.0": ["usage: vllm [-h] [-v]", "            {chat,complete,serve,launch,bench,collect-env,run-batch} ..."]}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def _run(api: client.CoreV1Api, name: str, tag: str, command: list[str], args: list[str]) -> tuple[str, int | None]:
    log, code = run(api, name, f"vllm/vllm-openai:{tag}", command, args)
    return ("", None) if code is None else (log, code)


@pytest.mark.parametrize("tag", ["v0.9.2", "v0.28.0"])
def test_an_unknown_option_is_refused_by_vllm_serve(api, tag):
    log, code = _run(api, f"bogus-{tag.replace('.', '-')}", tag, SERVE, [LLAMA, "--bogus-flag", "1"])
    assert code == 2
    assert log.splitlines() == [*TOP[tag], "vllm: error: unrecognized arguments: --bogus-flag 1"], log


def test_the_api_server_module_refuses_it_under_its_own_name(api):
    """``python -m vllm.entrypoints.openai.api_server``: argparse's prog is the script's name; the model is --model
    (no model_tag positional before 0.11.0), so the value word is left over too."""
    log, code = _run(api, "bogus-module", "v0.9.2", MODULE, ["--model", LLAMA, "--bogus_flag=1", "stray"])
    assert code == 2
    assert log.splitlines()[-1] == "api_server.py: error: unrecognized arguments: --bogus-flag=1 stray", log


def test_an_option_a_release_dropped_is_refused_there(api):
    """--disable-log-requests: engine/arg_utils.py@0.16.0 keeps it (deprecated), no file of 0.17.0's parser has it."""
    assert _run(api, "dlr-0-16", "v0.16.0", SERVE, [LLAMA, "--disable-log-requests"]) == ("", None)
    log, code = _run(api, "dlr-0-17", "v0.17.0", SERVE, [LLAMA, "--disable-log-requests"])
    assert (code, log.splitlines()[-1]) == (2, "vllm: error: unrecognized arguments: --disable-log-requests")


def test_an_abbreviation_of_one_option_is_that_option_and_of_several_is_refused(api):
    """argparse's allow_abbrev (no release read turns it off): a unique prefix is the option, a shared one is
    ``ambiguous option`` before anything is converted."""
    assert _run(api, "abbrev-one", "v0.9.2", SERVE, [LLAMA, "--max-model", "8192"]) == ("", None)
    log, code = _run(api, "abbrev-two", "v0.9.2", SERVE, [LLAMA, "--max-num", "8", "--max-model-len", "16Ki"])
    assert code == 2
    head, _sep, matches = log.splitlines()[-1].partition(" could match ")
    assert head == "vllm serve: error: ambiguous option: --max-num"
    assert log.splitlines()[-2] == USAGE  # raised inside serve's own parser: its prog and usage
    assert sorted(matches.split(", ")) == ["--max-num-batched-tokens", "--max-num-partial-prefills", "--max-num-seqs"]


def test_dotted_hf_overrides_before_0_9_is_an_unknown_option(api):
    """0.8.5's FlexibleArgumentParser dashes the whole name and argparse has no such option; 0.9.0 folds it into
    ``--hf-overrides {"num_hidden_layers": "16"}``, which it has."""
    log, code = _run(api, "dotted-0-8-5", "v0.8.5", SERVE, [LLAMA, "--hf-overrides.num_hidden_layers", "16"])
    assert code == 2
    assert log.splitlines() == [*TOP["v0.8.5"], "vllm: error: unrecognized arguments: "
                                       "--hf-overrides.num-hidden-layers 16"], log


def test_the_table_is_the_rehearsals_own():
    """Built by scripts/sim_vllm_options.py (regular expressions over each wheel), not the tools' flag table."""
    from vllm_remedy.sim.vllm_pod import argv_options

    with open(argv_options.__file__, encoding="utf-8") as fh:
        imports = [line for line in fh if line.startswith(("import ", "from "))]
    assert not [line for line in imports if "vllm_remedy" in line], imports
    assert "--bogus-flag" not in argv_options.options((0, 28, 0), True)
    assert "--disable-log-requests" in argv_options.options((0, 16, 0), True)
    # a loop over a literal list (engine/arg_utils.py@0.11.0), EnableDisableAction's inverse (argparse_utils@0.33.0)
    assert "--guided-decoding-backend" in argv_options.options((0, 11, 0), True)
    assert "--disable-prefix-caching" in argv_options.options((0, 34, 0), True)
    assert "--disable-prefix-caching" not in argv_options.options((0, 32, 0), True)


def test_an_inverse_enable_disable_option_serves_on_0_34(api):
    assert _run(api, "inverse-0-34", "v0.34.0", SERVE, [LLAMA, "--max-model-len", "8192",
                                                       "--disable-prefix-caching"]) == ("", None)


def test_dotted_words_of_an_unknown_option_fold_into_one_left_over_at_the_end(api):
    """From 0.9.0 FlexibleArgumentParser folds every ``--x.k v`` into one ``--x <json>`` appended after all other
    words (utils/__init__.py@0.9.2: the keys keep their underscores, the values are ``json.loads``-ed), so argparse
    meets ``--bogus`` last and leaves it over with its JSON after the other leftovers."""
    log, code = _run(api, "dotted-bogus", "v0.9.2", SERVE, [LLAMA, "--bogus.k_x", "1", "--bogus.j=2", "stray"])
    assert code == 2
    assert log.splitlines()[-1] == 'vllm: error: unrecognized arguments: stray --bogus {"k_x": 1, "j": 2}', log


def test_an_ambiguous_prefix_lists_its_matches_in_each_releases_order_as_the_tools_do():
    """argparse lists the matches in the parser's registration order, which changed between releases (0.7.3 registers
    --max-num-partial-prefills before --max-num-seqs, engine/arg_utils.py@0.7.3 l.517-547; later ones after it). The
    pod's table kept one order for all releases; it now has each release's own (``order``), read by its own scan.
    Checked against the tools' syntax-tree reading (``release_flags.judge``) on every release both read, 0.33.0 on
    too: there the pod gives only the BooleanOptionalAction --enable-x/--disable-x flags their inverse, as vLLM's
    EnableDisableAction does (utils/argparse_utils.py@0.33.0), no longer every one of them."""
    from vllm_remedy.sim.vllm_pod import argv_options
    from vllm_remedy.vllm.cmdline import release_flags
    from vllm_remedy.vllm.cmdline.release_flags import Verdict

    compared = 0
    for v in release_flags.releases():
        parser = release_flags.parser_for(".".join(map(str, v)))
        for prefix in ("--max-num", "--disable-log", "--enable-", "--max-", "--kv-"):
            verdict, matches = release_flags.judge(prefix, parser)
            if verdict is not Verdict.AMBIGUOUS:
                continue
            want = f"ambiguous option: {prefix} could match {', '.join(matches)}"
            assert argv_options.ambiguous(prefix, v) == want, (v, prefix)
            compared += 1
    assert compared >= 190
