"""Every bad policy fixture fails with exactly one line naming the file, the key path and what was expected.

Each fixture's first line is ``# expect: <message>`` with ``{file}`` / ``{dir}`` placeholders.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fixtures.yaml_bombs import alias_bomb
from vllm_remedy.errors import UserError
from vllm_remedy.policy import Policy, load_policy

BAD = Path(__file__).resolve().parents[1] / "data" / "policies" / "bad"
FIXTURES = sorted(BAD.glob("*.yaml"))


def _expected(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} lacks its expectation line"
    return first.removeprefix("# expect: ").format(file=path, dir=path.parent)


def test_there_are_many_bad_fixtures() -> None:
    assert len(FIXTURES) >= 30


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_bad_policy_is_one_precise_line(path: Path) -> None:
    with pytest.raises(UserError) as err:
        load_policy(path)
    message = str(err.value)
    assert "\n" not in message
    assert message == _expected(path)


def test_relative_path_is_reported_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD.parent.parent.parent.parent)  # the repo root
    with pytest.raises(UserError) as err:
        load_policy("tests/data/policies/bad/not-an-integer.yaml")
    assert str(err.value) == (
        'tests/data/policies/bad/not-an-integer.yaml: flags.max-model-len.max: expected an integer ≥ 1, got "lots"')


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        load_policy(tmp_path / "absent.yaml")
    assert str(err.value) == f"{tmp_path}/absent.yaml: no such policy file"
    with pytest.raises(UserError) as err:
        load_policy(tmp_path)
    assert str(err.value) == f"{tmp_path}: is a directory, expected a policy file"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"description: caf\xe9\n")
    with pytest.raises(UserError) as err:
        load_policy(path)
    assert str(err.value) == f"{path}: not UTF-8 text, expected a YAML policy"


@pytest.mark.parametrize(("data", "message"), [
    ({"flags": {"max-model-len": {"max": "lots"}}}, 'flags.max-model-len.max: expected an integer ≥ 1, got "lots"'),
    ({"alerts": {"fro": "5m"}}, "alerts.fro: unknown key (did you mean for?)"),
    ({"gpu": {"products": ["NVIDIA-L40S", 5]}}, "gpu.products[1]: expected a Kubernetes label value, got 5"),
    ({"target": "llm"}, 'target: expected a mapping, got "llm"'),
    ({"known_good": {"image": "x:1"}}, "known_good: expected a list, got a mapping"),
    ({"known_good": [{"flags": {"max-model-len": 1}}]}, "known_good[0].image: required key is missing"),
    ({"confirm": {"min_concurrency_ratio": 0}}, "confirm.min_concurrency_ratio: expected a number > 0, got 0"),
    ({"load_shedding": {"limit_mm_per_prompt": {"image": 0}}},
     "load_shedding.limit_mm_per_prompt.image: expected an integer ≥ 1, got 0"),
    ({"flags": {"max-num-seqs": {"preferred": 16}}, "load_shedding": {"max_num_seqs": 32}},
     "load_shedding.max_num_seqs: 32 is above flags.max-num-seqs.preferred 16: shedding must lower it"),
    ({"kv_cache_fp8": "sometimes"}, 'kv_cache_fp8.status: expected one of allowed, forbidden, got "sometimes"'),
    ({"flags": {"kv-cache-dtype": {"allowed": ["auto"], "preferred": "fp8"}}},
     'flags.kv-cache-dtype: preferred "fp8" is not in allowed (auto)'),
    ({"gpu": {"label": "bad label!"}},
     'gpu.label: expected a Kubernetes label key such as nvidia.com/gpu.product, got "bad label!"'),
    ({"fallback": {"route": {"name": "r", "namespace": "llm"}, "primary": {"name": "a"},
                   "fallback": {"name": "b", "group": "Not A Group"}}},
     'fallback.fallback.group: expected an API group such as gateway.networking.k8s.io ("" for core), '
     'got "Not A Group"'),
])
def test_from_mapping_errors(data: dict, message: str) -> None:
    with pytest.raises(UserError) as err:
        Policy.from_mapping(data, "inline.yaml")
    assert str(err.value) == f"inline.yaml: {message}"


def test_a_policy_alias_bomb_is_refused_in_well_under_a_second(tmp_path: Path) -> None:
    """A "billion laughs" policy would expand to 9**9 nodes; the size of the text decides, not the expansion."""
    path = tmp_path / "bomb.yaml"
    path.write_text("apiVersion: vllm-remedy.io/v1alpha1\n" + alias_bomb())
    started = time.monotonic()
    with pytest.raises(UserError) as err:
        load_policy(path)
    assert time.monotonic() - started < 1.0
    assert str(err.value) == f"{path}: refused: YAML aliases expand to more than 100000 extra nodes (alias bomb?)"
