"""An option on a release newer than the newest read (hostile review 14, F15): judged with the newest read release's
parser, as the rehearsal pod of that image judges it. A name no release read ever had is *not judged*
(``unrecognized.unjudged``: the release may have added it), neither refused nor silently known; an ambiguous prefix
and an option a read release dropped stay refused; and between read releases every option is still judged per
release (a removal is refused from the first release read without it, not before)."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.cmdline import find_server, unrecognized

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _server(args: list[str], image: str = "vllm/vllm-openai:v0.35.0"):
    return find_server({"containers": [{"name": "vllm", "image": image, "command": ["vllm", "serve"],
                                        "args": [LLAMA, *args]}]})


def _words(found: list) -> list[str]:
    return [str(w) for w in found]


@pytest.mark.parametrize("version", ["0.35.0", "0.34.1", "0.34.0.post1", "0.35.0rc1", "1.0.0", None])
def test_a_name_no_release_read_had_is_not_judged_past_the_newest(version):
    server = _server(["--foo_bar", "1", "--max-model-len", "8192"])
    assert unrecognized.unrecognized(server, version) == []
    assert unrecognized.unjudged(server, version) == ["--foo_bar 1"]


def test_the_note_says_what_was_read_and_that_the_release_may_accept_it():
    assert unrecognized.note("--foo_bar 1", "0.35.0") == (
        "not judged: --foo-bar is not an option of vLLM 0.34.0, the newest release read; 0.35.0 may accept it (a "
        "rehearsal pod starts with it, its effect not modelled)")
    assert "; the image's release may accept it" in unrecognized.note("--foo-bar", None)


@pytest.mark.parametrize("version", ["0.34.0", "0.28.0", "0.9.1"])
def test_a_release_read_or_between_two_read_still_refuses_it(version):
    server = _server(["--foo-bar", "1"])
    assert _words(unrecognized.unrecognized(server, version)) == ["--foo-bar 1"]
    assert unrecognized.unjudged(server, version) == []


@pytest.mark.parametrize(("args", "refused"), [
    (["--swap-space", "4"], "--swap-space 4"),  # CacheConfig's, to 0.17.0 (engine/arg_utils.py@0.17.0 l.951)
    (["--task", "generate"], "--task generate"),  # deprecated in 0.12.0 (arg_utils.py@0.12.0 l.619), gone in 0.13.0
    (["--cuda-graph-sizes", "8"], "--cuda-graph-sizes 8"),  # gone in 0.13.0 (memory.flag_values)
    (["--max-num", "8"], "--max-num 8"),  # the prefix of several of 0.34.0's options: still several
])
def test_a_dropped_option_or_an_ambiguous_prefix_stays_refused_past_the_newest(args, refused):
    server = _server(args)
    assert _words(unrecognized.unrecognized(server, "0.35.0")) == [refused]
    assert unrecognized.unjudged(server, "0.35.0") == []


@pytest.mark.parametrize(("args", "kept", "dropped"), [
    (["--swap-space", "4"], "0.17.0", "0.18.0"),
    (["--task", "generate"], "0.12.0", "0.13.0"),
])
def test_a_removal_between_read_releases_is_judged_per_release(args, kept, dropped):
    """A guard (it held before this change): the last release read with the option takes it, the next refuses it."""
    server = _server(args, f"vllm/vllm-openai:v{kept}")
    assert unrecognized.unrecognized(server, kept) == []
    assert _words(unrecognized.unrecognized(server, dropped)) == [" ".join(args)]


def test_options_the_newest_read_has_are_taken_past_it():
    server = _server(["--disable-prefix-caching", "--max-model-len", "8192", "--enable-log-requests"])
    assert unrecognized.unrecognized(server, "0.35.0") == [] and unrecognized.unjudged(server, "0.35.0") == []
