"""The per-release option table (``data/vllm_flags.json``, ``scripts/vllm_flags.py``) and how a written option is
judged against one release's parser. The vLLM sources are not on CI, so the committed JSON is checked by invariants:
it covers the union table, agrees with every hand-read first/last release (``unrecognized.ADDED``/``REMOVED``,
``booleans``) and with what the old union-based claim accepted on the three releases it was read from; regenerated
from the wheels only where VLLM_WHEEL_SOURCES names them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.wheels import SKIP, complete
from vllm_remedy.vllm.cmdline import booleans, flags, release_flags, table, unrecognized
from vllm_remedy.vllm.cmdline.release_flags import Verdict, has, judge, parser_for

ROOT = Path(__file__).resolve().parents[3]
READ = release_flags.releases()


def _text(v: tuple[int, int, int]) -> str:
    return ".".join(map(str, v))


def _options(release: str) -> frozenset[str]:
    parser = parser_for(release)
    assert parser is not None and parser.exact, release
    return parser.options


def test_the_table_reads_43_releases_oldest_first():
    assert len(READ) == 43 and list(READ) == sorted(READ)
    assert {(0, 5, 5), (0, 7, 3), (0, 9, 2), (0, 11, 0), (0, 19, 0), (0, 28, 0), (0, 34, 0)} <= set(READ)
    sizes = [len(_options(_text(v))) for v in READ]
    assert min(sizes) > 100 and max(sizes) < 600  # 109 (0.5.5) to 496 (0.34.0) when generated
    assert all("-h" in _options(_text(v)) and "--help" in _options(_text(v)) for v in READ)


def test_every_flag_of_the_union_table_is_in_some_release():
    every = set().union(*(_options(_text(v)) for v in READ))
    # --disable-logprobs-during-spec-decoding was StoreBoolean (engine/arg_utils.py@0.5.5-0.8.0), never
    # BooleanOptionalAction: table.BOOLEAN holds it for its no-value arity, but no release has its --no- form
    union = {f"--{k}" for k in flags.KNOWN} | {f"--no-{b}" for b in table.BOOLEAN - table.LEGACY_OPTIONAL_BOOLEAN}
    union |= {a if a.startswith("-") else f"--{a}" for a in table.ALIASES}
    assert sorted(union - every) == []


def _old_claim_accepted() -> set[str]:
    """What the union-based claim (main before the per-release table) accepted on 0.7.3, 0.11.0 and 0.34.0: a long
    option the union resolves exactly (``flags._canonical_long``)."""
    return {f"--{k}" for k in flags.KNOWN} | {f"--no-{b}" for b in table.BOOLEAN} | \
        {f"--{a}" for a in table.ALIASES if not a.startswith("-")}


#: What the three releases have that the union-based claim refused, each read in the release's source:
#: ``--help`` (argparse's own), 0.11.0's deprecated ``--guided-decoding-disable-*`` (engine/arg_utils.py@0.11.0: a
#: loop over literal tuples, ``deprecated=True``, still registered) and 0.34.0's ``EnableDisableAction`` inverses
#: (utils/argparse_utils.py@0.33.0+: every BooleanOptionalAction ``--enable-x`` also registers ``--disable-x``).
GUIDED = {"--guided-decoding-disable-fallback", "--guided-decoding-disable-any-whitespace",
          "--guided-decoding-disable-additional-properties"}


def _inverses() -> set[str]:
    """The ``--disable-x`` of each ``--enable-x`` BooleanOptionalAction of 0.34.0 (its ``--no-x`` there), and back."""
    out = set()
    for b in (b for b in table.BOOLEAN if f"--no-{b}" in _options("0.34.0")):
        for a, z in (("enable-", "disable-"), ("disable-", "enable-")):
            if b.startswith(a):
                out.add(f"--{z}{b[len(a):]}")
    return out


@pytest.mark.parametrize(("release", "justified"), [
    ("0.7.3", {"--help"}), ("0.11.0", {"--help", *GUIDED}), ("0.34.0", {"--help"} | _inverses()),
])
def test_the_three_union_releases_hold_what_the_old_claim_accepted_and_the_read_differences(release, justified):
    longs = {o for o in _options(release) if o.startswith("--")}
    assert longs - _old_claim_accepted() == justified - _old_claim_accepted()
    assert len(_old_claim_accepted() - longs) > 0  # what the union let through there: now refused


def _expected(name: str, v: tuple[int, int, int]) -> bool:
    since, gone = unrecognized.ADDED.get(name, (0, 0, 0)), unrecognized.REMOVED.get(name)
    return v >= since and (gone is None or v < gone)


@pytest.mark.parametrize("name", sorted(set(unrecognized.ADDED) | set(unrecognized.REMOVED)))
def test_the_table_agrees_with_every_hand_read_boundary(name):
    """kv-cache-memory-bytes since 0.10.2, hf-overrides since 0.6.4, hf-config-path since 0.8.0, the capture flags
    (cuda-graph-sizes 0.9.0 until 0.13.0; the two CompilationConfig ones since 0.11.1, between 0.11.0 and 0.12.0)."""
    assert [_text(v) for v in READ if has(f"--{name}", v) != _expected(name, v)] == []


def test_no_negated_form_where_the_hand_read_release_has_store_true():
    """``booleans._STORE_TRUE_READ``: a store_true flag of a release read by hand has no ``--no-x`` there. (Only
    those releases: booleans carries 0.8.5's list to 0.9.0, where the table reads BooleanOptionalAction: ``**model_
    kwargs["enforce_eager"]``, a ``bool`` field, engine/arg_utils.py@0.9.0.)"""
    for since, store_true in booleans._STORE_TRUE_READ:
        v = since if since != (0, 0, 0) else (0, 6, 5)
        options = _options(_text(v))
        wrong = [n for n in store_true if f"--{n}" in options and f"--no-{n}" in options]
        assert wrong == [], _text(v)
    assert "--no-enforce-eager" not in _options("0.8.5") and "--no-enforce-eager" in _options("0.9.0")


@pytest.mark.parametrize(("release", "spelled", "verdict"), [
    ("0.9.2", "--bogus-flag", Verdict.UNKNOWN),
    ("0.9.2", "--max_num_seqs", Verdict.KNOWN),  # FlexibleArgumentParser: _ to -
    ("0.9.2", "--max-num-s", Verdict.KNOWN),  # unique prefix of --max-num-seqs there...
    ("0.34.0", "--max-num-s", Verdict.AMBIGUOUS),  # ...not in 0.34.0 (--max-num-scheduled-tokens)
    ("0.9.2", "--enable-db", Verdict.UNKNOWN),  # the prefix of --enable-dbo, a 0.11.0 flag
    ("0.11.0", "--enable-db", Verdict.KNOWN),
    ("0.9.2", "--compilation-config.level", Verdict.KNOWN),  # dotted keys folded from 0.9.0
    ("0.9.2", "--bogus.level", Verdict.UNKNOWN),
    ("0.8.5", "--compilation-config.level", Verdict.NOT_JUDGED),  # passed to argparse whole: not ours to say
    ("0.34.0", "--disable-prefix-caching", Verdict.KNOWN),  # EnableDisableAction
    ("0.32.0", "--disable-prefix-caching", Verdict.UNKNOWN),
    ("0.5.5", "-dp", Verdict.UNKNOWN), ("0.8.3", "-dp", Verdict.KNOWN),
    ("0.9.2", "-qfp8", Verdict.KNOWN),  # -q with its value attached
])
def test_an_option_is_judged_against_its_releases_own_strings(release, spelled, verdict):
    assert judge(spelled, parser_for(release))[0] is verdict


def test_a_release_between_two_read_ones_is_refused_only_what_both_lack():
    between = parser_for("0.9.1")
    assert between is not None and not between.exact
    assert judge("--bogus-flag", between)[0] is Verdict.UNKNOWN
    assert "--api-server-count" not in _options("0.9.0") and judge("--api-server-count", between)[0] is Verdict.KNOWN
    assert judge("--max-num", between)[0] is Verdict.KNOWN  # ambiguous in both: no inference claims it


@pytest.mark.parametrize("version", ["0.35.0", "0.34.0rc1", "0.34.0.dev3", "0.5.4", "0.34.0.post1", None, "latest"])
def test_a_version_outside_the_read_span_is_not_judged(version):
    assert parser_for(version) is None


def test_the_committed_table_is_what_the_generator_writes(tmp_path):
    """Only where the extracted wheels are (VLLM_WHEEL_SOURCES=DIR of src-<release>/vllm, all 43 releases)."""
    wheels = complete(f"{SKIP}: python scripts/vllm_flags.py DIR")
    out = tmp_path / "flags.json"
    subprocess.run([sys.executable, str(ROOT / "scripts/vllm_flags.py"), str(wheels), "-o", str(out)],
                   check=True, capture_output=True)
    committed = ROOT / "src/vllm_remedy/vllm/data/vllm_flags.json"
    assert json.loads(out.read_text()) == json.loads(committed.read_text())
