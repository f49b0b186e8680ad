"""The generated per-release words (``nargs``), printed option strings (``shown``) and parser behaviour against the
hand-read union table and its per-release exceptions: every disagreement is listed here, each checked in vLLM's
source (the generated side is right in each: see the comments)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from vllm_remedy.vllm.cmdline import flags, release_flags, table
from vllm_remedy.vllm.cmdline.flags import Kind

READ = release_flags.releases()
_WORDS = {Kind.BOOLEAN: "0", Kind.STORE_TRUE: "0", Kind.OPTIONAL: "?", Kind.MULTI: "+", Kind.VALUE: "1"}

#: Where the newest release read that has a flag gives it other words than the union table (``--long-lora-scaling-
#: factors`` was one: ``Optional[tuple[float, ...]]`` in LoRAConfig, config.py@0.8.5-0.9.2, ``get_kwargs``: nargs='+',
#: now MULTI_VALUE); ``--disable-logprobs-during-spec-decoding``: StoreBoolean (nargs='?', engine/arg_utils.py
#: @0.5.5-0.8.0), kept no-value in the table for ``parse``'s legacy handling (``table.LEGACY_OPTIONAL_BOOLEAN``).
NEWEST_DIFFERS = {"disable-logprobs-during-spec-decoding": "?"}


def _newest(name: str) -> str | None:
    found = [v for v in READ if release_flags.nargs(f"--{name}", v) is not None]
    return release_flags.nargs(f"--{name}", found[-1]) if found else None


def test_the_union_table_agrees_with_the_newest_release_read_that_has_each_flag():
    differs = {n: _newest(n) for n in flags.KNOWN if _newest(n) not in (None, _WORDS[flags.kind_of(n)])}
    assert differs == NEWEST_DIFFERS


def test_a_flag_that_became_a_list_took_one_word_before():
    """MULTI_SINCE (--api-key: one word to 0.10.0, nargs='+' from 0.10.1) and two the table did not know:
    --collect-detailed-traces (``type=str`` to 0.8.5) and --ignore-patterns (``action="append"`` to 0.8.5)."""
    for name, first in (("api-key", (0, 10, 1)), ("collect-detailed-traces", (0, 9, 0)),
                        ("ignore-patterns", (0, 9, 0))):
        assert {release_flags.nargs(f"--{name}", v) for v in READ if v < first} == {"1"}, name
        assert {release_flags.nargs(f"--{name}", v) for v in READ if v >= first} == {"+"}, name
        assert flags.kind_in(name, (0, 8, 5)) is Kind.VALUE and flags.kind_in(name, (0, 34, 0)) is Kind.MULTI
    assert flags.MULTI_SINCE == {"api-key": (0, 10, 1)}


def test_an_option_only_some_release_has_takes_its_own_words():
    assert flags.kind_in("disable-prefix-caching", (0, 34, 0), Kind.UNKNOWN) is Kind.STORE_TRUE
    assert flags.kind_in("disable-prefix-cach", (0, 34, 0), Kind.UNKNOWN) is Kind.STORE_TRUE  # its unique prefix
    assert flags.kind_in("engine-use-ray", (0, 6, 0), Kind.UNKNOWN) is Kind.STORE_TRUE
    assert flags.kind_in("quantization-param-path", (0, 6, 0), Kind.UNKNOWN) is Kind.VALUE
    # newer than read, or unknown: the newest release read; older than the oldest read: the union table
    assert flags.kind_in("disable-prefix-caching", (0, 35, 0), Kind.UNKNOWN) is Kind.STORE_TRUE
    assert flags.kind_in("disable-prefix-caching", None, Kind.UNKNOWN) is Kind.STORE_TRUE
    assert flags.kind_in("disable-prefix-caching", (0, 5, 4), Kind.UNKNOWN) is Kind.UNKNOWN
    assert flags.kind_in("api-key", (0, 5, 4)) is Kind.VALUE  # MULTI_SINCE


def test_every_release_read_rewrites_underscores_before_argparse():
    data = release_flags._data()
    assert data["parser"]["underscore"] == [[0, len(READ) - 1]]


def test_a_boolean_is_store_true_or_has_its_no_form_as_the_release_registers_it():
    """0.9.0 already has --no-enforce-eager (booleans' hand-read lists carried 0.8.5's store_true to 0.9.1);
    0.5.5-0.6.4's --enable-prefix-caching and 0.8.0's --enable-expert-parallel are store_true (the hand-read lists
    took a flag not listed as a BooleanOptionalAction); 0.8.5's --enable-prompt-adapter is a BooleanOptionalAction
    (``action=argparse.BooleanOptionalAction`` in engine/arg_utils.py@0.8.5; the table has it store_true)."""
    assert release_flags.shown("--enforce-eager", (0, 9, 0)) == "--enforce-eager/--no-enforce-eager"
    assert release_flags.shown("--enforce-eager", (0, 9, 1)) == "--enforce-eager/--no-enforce-eager"
    assert release_flags.shown("--enforce-eager", (0, 8, 5)) == "--enforce-eager"
    assert release_flags.shown("--enable-prefix-caching", (0, 6, 4)) == "--enable-prefix-caching"
    assert release_flags.shown("--enable-expert-parallel", (0, 8, 0)) == "--enable-expert-parallel"
    assert release_flags.shown("--enable-prompt-adapter", (0, 8, 5)) == \
        "--enable-prompt-adapter/--no-enable-prompt-adapter"
    assert release_flags.shown("--enable-prefix-caching", (0, 34, 0)) == \
        "--enable-prefix-caching/--disable-prefix-caching"
    assert "enable-prompt-adapter" in table.STORE_TRUE


def test_each_releases_registration_order_is_rebuilt_exactly():
    """Only where the extracted wheels are (VLLM_WHEEL_SOURCES, as ``test_release_flags``): the compact ``order``
    (one shared order, each release's moved strings) gives back every release's own walk order."""
    roots = [Path(p) for p in os.environ.get("VLLM_WHEEL_SOURCES", "").split(os.pathsep) if p]
    roots = [r for r in roots if (r / "src-0.34.0/vllm").is_dir()]
    if not roots:
        pytest.skip("VLLM_WHEEL_SOURCES names no extracted vLLM wheels")
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
    try:
        from vllm_flags_read import Release
    finally:
        sys.path.pop(0)
    for i, v in enumerate(READ):
        walk = Release(roots[0] / f"src-{'.'.join(map(str, v))}" / "vllm")
        walk.read()
        rank = release_flags._order(i)
        assert sorted(rank, key=rank.__getitem__) == list(walk.options), v
