"""The tools' reading of vLLM's EnableDisableAction (utils/argparse_utils.py@0.33.0/0.34.0: registered in place of
argparse's BooleanOptionalAction, it appends ``--disable-x`` to an ``--enable-x`` and the reverse): only a
BooleanOptionalAction gets an inverse, per release read, and a release newer than the newest read is read as that
newest one everywhere, the name argparse gives the action in ``ignored explicit argument`` included (it was
``--enable-lora/--no-enable-lora`` on 0.35.0 while ``--disable-lora`` was already read as its inverse there)."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.cmdline import release_flags
from vllm_remedy.vllm.cmdline.command import find_server
from vllm_remedy.vllm.cmdline.refused import refused

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
#: argparse's messages, measured on 0.34.0's own FlexibleArgumentParser under CPython 3.12.1
MESSAGES = {
    "--enable-lora=true": "argument --enable-lora/--disable-lora: ignored explicit argument 'true'",
    "--disable-lora=1": "argument --enable-lora/--disable-lora: ignored explicit argument '1'",
    "--enable-expert-parallel=1":
        "argument --enable-expert-parallel/-ep/--disable-expert-parallel: ignored explicit argument '1'",
    "--disable-log-stats=1": "argument --disable-log-stats: ignored explicit argument '1'",
}


def _said(tag: str, word: str) -> list[str]:
    spec = {"containers": [{"name": "vllm", "image": f"vllm/vllm-openai:v{tag}", "command": ["vllm", "serve"],
                            "args": [LLAMA, word]}]}
    return [r.message for r in refused(find_server(spec), tag)]


@pytest.mark.parametrize("tag", ["0.33.0", "0.34.0", "0.35.0"])
@pytest.mark.parametrize("word", list(MESSAGES))
def test_the_action_is_named_as_the_release_prints_it(tag, word):
    assert _said(tag, word) == [MESSAGES[word]]


def test_only_a_boolean_optional_action_has_an_inverse_in_the_table():
    """In every release read: an ``--enable-x``/``--disable-x`` string whose inverse is registered has its own
    ``--no-`` form (BooleanOptionalAction), none before 0.33.0; store_true ``--disable-log-stats`` and valued
    ``--disable-access-log-for-endpoints`` never have one."""
    with_inverse = 0
    for i, v in enumerate(release_flags.releases()):
        options = release_flags._read(i).options
        for o in (o for o in options if o.startswith(("--enable-", "--disable-"))):
            a, b = ("--enable-", "--disable-") if o.startswith("--enable-") else ("--disable-", "--enable-")
            other = b + o.removeprefix(a)
            shown = (release_flags.shown(o, v) or "").split("/")
            if other in options and other in shown:  # one action: the inverse appended to the given string
                assert v >= (0, 33, 0) and f"--no-{shown[0][2:]}" in options, (v, o)
                with_inverse += 1
        if v >= (0, 33, 0):
            assert "--enable-log-stats" not in options and "--enable-access-log-for-endpoints" not in options, v
    assert with_inverse == 2 * (50 + 51)
