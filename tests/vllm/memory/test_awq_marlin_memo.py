"""The AWQ Marlin replay's disk memo (``awq_marlin_memo``): a hit is the replay's bytes to the byte, and anything
amiss with the cache (corrupt, foreign, read-only, another code version, racing writers) ends in the replay's own
result, never an error and never another number."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fixtures.read_only import read_only
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory import awq_marlin_memo as memo
from vllm_remedy.vllm.memory.awq_marlin_load import RELEASE_RULE, ReplayInputs, replay, simulate, warm
from vllm_remedy.vllm.memory.awq_marlin_table import REPLAYED

SRC = Path(__file__).resolve().parents[3] / "src"
CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
# A 4-layer model no table holds: small enough to replay in a few ms.
SMALL = ReplayInputs(1024, 16, 8, 64, 2816, 128, 4, 32000, 4096, False, False, False, 1, 2)


def _boom() -> tuple[int, int, int]:
    raise AssertionError("replayed: the memo should have answered")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_ASSETS_CACHE", str(tmp_path / "assets"))
    return tmp_path / "assets"


def _entry() -> Path:
    key = memo.entry_key(SMALL, RELEASE_RULE)
    assert key is not None
    return memo.entry_path(key)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def test_a_hit_gives_the_replays_bytes_and_the_entry_lives_in_the_assets_cache(cache: Path) -> None:
    assert SMALL not in REPLAYED
    first = memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL))
    assert first == simulate(SMALL)
    assert memo.memoized(SMALL, RELEASE_RULE, _boom) == first
    assert _entry().is_file() and _entry().is_relative_to(cache / "vllm-remedy" / "awq-marlin")
    assert [p.name for p in _entry().parent.iterdir()] == [_entry().name]  # no temporary left behind


@pytest.mark.parametrize("content", [b"", b"{\"key\": ", b"\xff\xfe", b"[]", b"null",
                                     b"{\"key\": null, \"bytes\": [1, 2, 3]}"])
def test_a_corrupt_or_foreign_file_is_replayed_and_rewritten(cache: Path, content: bytes) -> None:
    _entry().parent.mkdir(parents=True)
    _entry().write_bytes(content)
    assert memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL)) == simulate(SMALL)
    assert memo.memoized(SMALL, RELEASE_RULE, _boom) == simulate(SMALL)


@pytest.mark.parametrize("numbers", [[1, 2], [3, 2, 1], [1.0, 2, 3], [True, 2, 3], ["1", 2, 3], [-1, 2, 3]])
def test_an_entry_of_the_right_key_whose_bytes_are_impossible_is_not_believed(cache: Path, numbers: list) -> None:
    key = memo.entry_key(SMALL, RELEASE_RULE)
    _entry().parent.mkdir(parents=True)
    _entry().write_text(json.dumps({"key": key, "bytes": numbers}))
    assert memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL)) == simulate(SMALL)


def test_a_fifo_or_a_folder_in_the_entrys_place_is_not_waited_on(cache: Path) -> None:
    _entry().parent.mkdir(parents=True)
    os.mkfifo(_entry())  # opened for reading without a writer, a blocking open would hang
    assert memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL)) == simulate(SMALL)
    _entry().unlink()
    _entry().mkdir()
    assert memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL)) == simulate(SMALL)


def test_a_read_only_cache_computes_and_still_serves_what_it_holds(cache: Path) -> None:
    with read_only(cache):
        assert memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL)) == simulate(SMALL)
        assert not _entry().exists()
    memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL))
    with read_only(cache):
        assert memo.memoized(SMALL, RELEASE_RULE, _boom) == simulate(SMALL)


def test_a_cache_path_through_a_file_computes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HF_ASSETS_CACHE", str(tmp_path / "file"))
    assert memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL)) == simulate(SMALL)


def test_another_code_version_or_release_rule_never_reads_the_entry(cache: Path, tmp_path: Path) -> None:
    memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL))
    assert memo.memoized(SMALL, (*RELEASE_RULE[:-1], RELEASE_RULE[-1] * 2), lambda: (1, 2, 3)) == (1, 2, 3)
    # One byte more in alloc_pools as imported: a new digest, so the entry written above is not read.
    module = sys.modules["vllm_remedy.vllm.memory.alloc_pools"]
    edited = tmp_path / "alloc_pools.py"
    edited.write_bytes(Path(module.__file__).read_bytes() + b"\n")
    before, original = memo.code_digest(), module.__file__
    module.__file__ = str(edited)
    memo.code_digest.cache_clear()
    try:
        assert memo.code_digest() not in (None, before)
        assert memo.memoized(SMALL, RELEASE_RULE, lambda: (4, 5, 6)) == (4, 5, 6)
    finally:
        module.__file__ = original
        memo.code_digest.cache_clear()
    assert memo.code_digest() == before
    assert memo.memoized(SMALL, RELEASE_RULE, _boom) == simulate(SMALL)


def test_unreadable_code_memoizes_nothing(cache: Path) -> None:
    module = sys.modules["vllm_remedy.vllm.memory.alloc_sim"]
    original, module.__file__ = module.__file__, str(cache / "gone.py")
    memo.code_digest.cache_clear()
    try:
        assert memo.memoized(SMALL, RELEASE_RULE, lambda: simulate(SMALL)) == simulate(SMALL)
        assert not cache.exists()
    finally:
        module.__file__ = original
        memo.code_digest.cache_clear()


WRITER = textwrap.dedent("""
    import sys
    from vllm_remedy.vllm.memory import awq_marlin_memo as memo
    from vllm_remedy.vllm.memory.awq_marlin_load import RELEASE_RULE, ReplayInputs, simulate
    inputs = ReplayInputs(*{inputs!r})
    key = memo.entry_key(inputs, RELEASE_RULE)
    value = simulate(inputs)
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(400):
        memo.write(key, value)
""")


def test_two_processes_writing_one_entry_never_leave_a_torn_file(cache: Path) -> None:
    code = WRITER.format(inputs=tuple(SMALL))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=_env(), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    want = list(simulate(SMALL))
    reads = 0
    while any(proc.poll() is None for proc in procs):
        try:
            text = _entry().read_bytes()
        except FileNotFoundError:
            continue
        assert json.loads(text)["bytes"] == want  # whole, every time
        reads += 1
    assert all(proc.wait() == 0 for proc in procs)
    assert reads > 0
    assert [p.name for p in _entry().parent.iterdir()] == [_entry().name]
    assert memo.memoized(SMALL, RELEASE_RULE, _boom) == simulate(SMALL)


def test_the_folder_is_where_huggingface_hub_puts_assets(tmp_path: Path) -> None:
    """``assets_dir`` reads the variables as huggingface_hub.constants does (it is not imported to save the time)."""
    probe = "from huggingface_hub import constants; from vllm_remedy.vllm.memory import awq_marlin_memo as m; " \
            "print(constants.HF_ASSETS_CACHE == str(m.assets_dir()))"
    base = {k: v for k, v in _env().items()
            if k not in ("HF_HOME", "HF_ASSETS_CACHE", "HUGGINGFACE_ASSETS_CACHE", "XDG_CACHE_HOME", "HF_HUB_CACHE")}
    for extra in ({}, {"HF_HOME": str(tmp_path / "home")}, {"XDG_CACHE_HOME": str(tmp_path / "xdg")},
                  {"HF_ASSETS_CACHE": str(tmp_path / "a"), "HF_HOME": str(tmp_path / "home")},
                  {"HUGGINGFACE_ASSETS_CACHE": str(tmp_path / "legacy")}, {"HF_HUB_CACHE": str(tmp_path / "hub")}):
        done = subprocess.run([sys.executable, "-c", probe], env={**base, **extra}, capture_output=True, text=True,
                              check=True)
        assert done.stdout.strip() == "True", extra


FINDS = textwrap.dedent("""
    from vllm_remedy.vllm.memory import awq_marlin_load as load
    from vllm_remedy import hub
    model = hub.spec_from_json(open({path!r}).read(), "m", "m")
    def boom(inputs):
        raise AssertionError("replayed")
    load.simulate = boom
    print(load.replay(model, 2, 2))
""")


def test_a_model_warmed_when_resolved_is_found_by_a_later_processs_estimate(cache: Path, tmp_path: Path) -> None:
    """``warm`` (for the layer that resolves configs) replays each TP the shape divides into; a new process's replay
    then reads it."""
    config = json.loads((CONFIGS / "Qwen2.5-72B-Instruct-AWQ-unpadded.json").read_text())
    config["num_hidden_layers"] = 6  # a shape no table holds, quick to replay
    config["intermediate_size"] = 29696
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    model = catalog.ModelSpec.from_hf_config(config, "m")
    assert warm(model) == 4  # TP 1, 2, 4, 8
    assert len(list(cache.rglob("*.json"))) == 4
    done = subprocess.run([sys.executable, "-c", FINDS.format(path=str(path))], env=_env(), capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == str(replay(model, 2, 2))


def test_the_packaged_table_is_read_before_the_memo(cache: Path) -> None:
    assert warm(catalog.model("Qwen/Qwen3-32B-AWQ")) == 0
    assert not cache.exists()
