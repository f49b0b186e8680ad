"""A rehearsal pod reads every single-dash option as vLLM's parser does, and agrees with check.

vLLM 0.34.0's FlexibleArgumentParser hands a single-dash word to argparse as written (it rewrites only ``-O...`` and
folds dotted keys: utils/argparse_utils.py@0.34.0 ``parse_args``), and argparse (CPython 3.12 ``_parse_optional`` /
``_get_option_tuples``) takes an exact option string, the part before ``=``, an option string equal to the first two
characters (``-qfp8``: ``-q``), or the one option string the word abbreviates; several are ``ambiguous option`` (raised
by ``vllm serve``'s own parser), none leaves the word over for the top-level ``vllm`` parser's ``unrecognized
arguments``. The pod judged only ``-O`` and ``-cc`` and started with ``-xyz``, ``-tp2`` or the ambiguous ``-d 2``,
which check refuses. Past the newest release read (0.35.0) a single-dash name no release read had is taken as the
release's own and named in the pod's log, as check says "not judged" of it; one a read release dropped
(``-spec-draft-tp``, last in 0.8.0) stays refused."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod import argv_options
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.vllm.cmdline import find_server, release_flags, unrecognized
from vllm_remedy.vllm.cmdline.refused import Refused
from vllm_remedy.vllm.version_labels import dotted

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
D_MATCHES = "-dcp, -dp, -dpn, -dpr, -dpl, -dpa, -dpp, -dpb, -dph, -dpe, -dpm, -dc"


def _judge(tag: str, *args: str) -> tuple[Launch | Refusal, str | None]:
    """The pod's verdict and argparse's message as check's refusals (``cmdline.unrecognized``) compose it, of
    ``vllm serve LLAMA ARGS``: the first refusal's own message, or every leftover in one ``unrecognized arguments``."""
    c = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"],
         "args": [LLAMA, *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    server = find_server({"containers": [c]})
    found = unrecognized.unrecognized(server, tag.removeprefix("v"))
    if not found:
        return plan(server, c, node), None
    if isinstance(found[0], Refused) and not found[0].message.startswith("unrecognized"):
        return plan(server, c, node), found[0].message
    left = [r.message.removeprefix("unrecognized arguments: ") if isinstance(r, Refused) else r for r in found]
    return plan(server, c, node), f"unrecognized arguments: {' '.join(left)}"


@pytest.mark.parametrize(("args", "error"), [
    (["-xyz"], "vllm: error: unrecognized arguments: -xyz"),
    (["-xyz", "1"], "vllm: error: unrecognized arguments: -xyz 1"),
    (["-tp2"], "vllm: error: unrecognized arguments: -tp2"),  # no -t: the two-character rule does not apply
    (["-x=1"], "vllm: error: unrecognized arguments: -x=1"),
    (["--max-model-len", "8192", "-xyz", "--bogus-flag", "1"],
     "vllm: error: unrecognized arguments: -xyz --bogus-flag 1"),  # leftovers in argv order
    (["-d", "2"], f"vllm serve: error: ambiguous option: -d could match {D_MATCHES}"),
    (["-d=2"], f"vllm serve: error: ambiguous option: -d=2 could match {D_MATCHES}"),
    (["-p", "2"], "vllm serve: error: ambiguous option: -p could match -pp, -pcp"),
    (["-a", "1"], "vllm serve: error: ambiguous option: -a could match -asc, -ac"),
])
def test_0_34_refuses_what_its_parser_refuses_as_check_does(args: list[str], error: str) -> None:
    pod, tools = _judge("v0.34.0", *args)
    assert isinstance(pod, Refusal) and pod.stage == "argparse", pod
    assert pod.error.splitlines()[-1] == error, pod.error
    assert tools == error.partition(": error: ")[2], tools


@pytest.mark.parametrize("args", [["-qfp8"], ["-e"], ["-tp", "1"], ["-tp=1"], ["-pp", "1"], ["-sc", "{}"]])
def test_0_34_starts_with_what_its_parser_takes_as_check_does(args: list[str]) -> None:
    """``-qfp8`` is ``-q fp8``, ``-e`` abbreviates ``-ep`` alone, ``-tp=1`` splits at ``=``."""
    pod, tools = _judge("v0.34.0", *args)
    assert not (isinstance(pod, Refusal) and pod.stage == "argparse"), pod.error
    assert tools is None, tools


def test_past_the_newest_read_a_new_single_dash_name_starts_and_is_named() -> None:
    pod, tools = _judge("v0.35.0", "-xyz", "1")
    assert isinstance(pod, Launch) and pod.unmodelled == ("-xyz",), pod
    assert tools is None
    server = find_server({"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.35.0",
                                          "command": ["vllm", "serve"], "args": [LLAMA, "-xyz", "1"]}]})
    assert unrecognized.unjudged(server, "0.35.0") == ["-xyz 1"]
    for args, error in ((["-spec-draft-tp", "2"], "vllm: error: unrecognized arguments: -spec-draft-tp 2"),
                        (["-d", "2"], f"vllm serve: error: ambiguous option: -d could match {D_MATCHES}")):
        pod, tools = _judge("v0.35.0", *args)
        assert isinstance(pod, Refusal) and pod.error.splitlines()[-1] == error, pod
        assert tools == error.partition(": error: ")[2], tools


def test_the_rehearsal_s_single_dash_options_are_the_tools_per_release() -> None:
    """The rehearsal's table (regular expressions over the wheels, ``names`` rows) against the tools' (the syntax
    tree, ``release_flags``), on every release both read."""
    for version in release_flags.releases():
        tools = release_flags.parser_for(dotted(version))
        assert tools is not None
        assert set(argv_options.shorts(version, True)) == {o for o in tools.options if not o.startswith("--")}, version
