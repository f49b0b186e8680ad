"""The shell reading both the tools and the rehearsal pod use for an ``sh -c`` script's vLLM words (``script_vars``):
what POSIX sh gives vLLM for each form it reads, and ``Unread`` with a reason for each it does not (hostile review
15b, F7). Each expected value is what dash/bash print for ``printf '<%s>' WORD`` after the same statements."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm.cmdline.script_vars import Table, Unread, expand

VLLM = "exec vllm serve m"


def _fields(before: str, word: str, env: dict[str, str] | None = None, **kw: object) -> list[str] | Unread:
    table = Table(f"{before}\n{VLLM} {word}\n", env or {}, **kw)  # type: ignore[arg-type]
    return expand(word, table)


@pytest.mark.parametrize(("before", "word", "env", "want"), [
    ("MODEL=meta-llama/x", '"$MODEL"', {}, ["meta-llama/x"]),
    ("MODEL=a", "${MODEL}", {"MODEL": "b"}, ["a"]),  # the script's assignment over the env's
    ("export M=a; M=b", "$M", {}, ["b"]),
    ("B=meta; M=$B/x", "$M", {}, ["meta/x"]),  # an assignment's value is expanded in turn
    ('A="--max-model-len 4096"', "$A", {}, ["--max-model-len", "4096"]),  # unquoted: split at blanks
    ('A="--max-model-len 4096"', '"$A"', {}, ["--max-model-len 4096"]),
    ("unset X", '"$X"', {"X": "1"}, [""]),
    ("unset X", "$X", {"X": "1"}, []),  # an unquoted empty expansion is no field at all
    ("", "${X:-8192}", {"X": ""}, ["8192"]),
    ("", "'$X'", {"X": "1"}, ["$X"]),  # single quotes: no expansion
    ("", "\\$X", {"X": "1"}, ["$X"]),
    ("", "pre${X}post", {"X": "1"}, ["pre1post"]),
    ("echo hi # MODEL=no", "$X", {"X": "1"}, ["1"]),  # a comment sets nothing
])
def test_what_sh_gives_vllm(before: str, word: str, env: dict[str, str], want: list[str]) -> None:
    assert _fields(before, word, env) == want


@pytest.mark.parametrize(("before", "word", "why"), [
    ("MODEL=$(cat /m)", "$MODEL", "command substitution"),
    ("true && MODEL=a", "$MODEL", "list, pipeline"),
    ("if true; then MODEL=a; fi", "$MODEL", "list, pipeline"),
    ("read MODEL < /m", "$MODEL", "`read` sets it"),
    ("", "$1", "special parameter"),
    ("", "${X#p}", "parameter expansion form"),
    ("", "$NOWHERE", "the image may set it"),
    ("X='a*'", "$X", "matches against files"),
    ("", "`cat /m`", "command substitution"),
])
def test_what_it_does_not_read_is_unread_with_why(before: str, word: str, why: str) -> None:
    got = _fields(before, word)
    assert isinstance(got, Unread) and why in got.why, got


def test_the_rehearsal_reads_a_name_set_nowhere_as_empty_and_runs_date() -> None:
    assert _fields("", "$NOWHERE", unset_is_empty=True) == []
    assert _fields("", '"at $(date)"', commands={"date": "Sun Dec  6 15:16:48 UTC 2026"}) == \
        ["at Sun Dec  6 15:16:48 UTC 2026"]
