"""A rehearsal pod of a release newer than the newest read (vllm/vllm-openai:v0.35.0) given an option no release read
ever had starts with it and says in its log that the option was not modelled, as check and plan say "not judged" of
it (``argv.unmodelled``): a newer release keeps its predecessor's options and may add this one. It used to refuse
it as 0.34.0's parser would (``vllm: error: unrecognized arguments: --foo-bar 1``) while check passed it silently.
An option a read release dropped (--swap-space, gone in 0.18.0) stays refused past the newest read, and 0.34.0
itself, a release read, still refuses the unknown one. Through the served rehearsal cluster and the official
``kubernetes`` client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from fixtures.served_pods import run, served
from vllm_remedy.sim.vllm_pod import argv_options
from vllm_remedy.vllm.cmdline import release_flags

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
SERVE = ["vllm", "serve"]
ARGS = [LLAMA, "--max-model-len", "16384", "--foo-bar", "1"]
WARNING = ("[vllm-remedy rehearsal] --foo-bar is not an option of vLLM 0.34.0, the newest release read: taken as "
           "{}'s, its effect not modelled")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


@pytest.mark.parametrize(("tag", "named"), [("v0.35.0", "0.35.0"), ("latest", "the image")])
def test_an_option_no_release_read_had_is_taken_and_said_unmodelled(api, tag, named):
    log, code = run(api, f"foo-{tag.replace('.', '-')}", f"vllm/vllm-openai:{tag}", SERVE, ARGS)
    assert code is None, log  # it serves
    said = [line for line in log.splitlines() if "[vllm-remedy rehearsal]" in line]
    assert len(said) == 2 and said[1].endswith(WARNING.format(named)), said  # after the extrapolated rules' line
    assert "unrecognized arguments" not in log


def test_an_option_a_read_release_dropped_is_still_refused_past_the_newest(api):
    log, code = run(api, "swap-0-35", "vllm/vllm-openai:v0.35.0", SERVE, [LLAMA, "--swap-space", "4"])
    assert code == 2
    assert log.splitlines()[-1] == "vllm: error: unrecognized arguments: --swap-space 4", log


def test_the_newest_release_read_refuses_it(api):
    log, code = run(api, "foo-0-34", "vllm/vllm-openai:v0.34.0", SERVE, ARGS)
    assert code == 2
    assert log.splitlines()[-1] == "vllm: error: unrecognized arguments: --foo-bar 1", log


def test_the_rehearsal_and_the_tools_agree_on_every_dropped_option():
    """Every long option string some read release had and 0.34.0 lacks (83 in the tools' table, read from the syntax
    tree) is one the rehearsal's own table (regular expressions over the wheels) also knows was there, so a 0.35.0
    pod refuses each as check does; none is taken as perhaps new."""
    dropped = sorted(o for o in release_flags.every() if o.startswith("--") and o not in release_flags.newest().options)
    assert len(dropped) > 50
    assert [o for o in dropped if argv_options.unmodelled(o, argv_options.newest())] == []
