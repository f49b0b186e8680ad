"""`check` names first the refusal vLLM prints, and the rehearsal pod started from the same container exits on those
words (hostile review 13, finding 11). argparse sorts every word into option or positional before it reads any value
(an ambiguous prefix is refused there), then refuses options one by one in argv order (a value, a boolean's explicit
value, a StoreBoolean's word). Before, `check` listed an ambiguous option after the values it cannot read, and after
a StoreBoolean's ValueError, so `plan` said exit 1 where vLLM exits 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures.check_batch import judge
from fixtures.vllm_deployment import LLAMA, manifest
from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod.launch import Refusal, plan
from vllm_remedy.vllm.cmdline import find_server

CASES = [  # (release, args after the model tag, argparse's message)
    ("0.30.0", ["--max-model-len", "abc", "--enforce-eager=1"],
     "argument --max-model-len: invalid human_readable_int_or_auto value: 'abc'"),
    ("0.30.0", ["--enforce-eager=1", "--max-model-len", "abc"],
     "argument --enforce-eager/--no-enforce-eager: ignored explicit argument '1'"),
    ("0.30.0", ["--max-model-len", "abc", "--max-num", "4"],
     "ambiguous option: --max-num could match --max-num-batched-tokens, --max-num-scheduled-tokens, --max-num-seqs, "
     "--max-num-queued-reqs, --max-num-queued-tokens"),
    ("0.8.3", ["--enable-chunked-prefill=yes", "--disable-log"],
     "ambiguous option: --disable-log could match --disable-log-stats, --disable-log-requests"),
]


def _container(version: str, args: list[str]) -> dict:
    return {"name": "vllm", "image": f"vllm/vllm-openai:v{version}", "command": ["vllm", "serve"],
            "args": [LLAMA, *args], "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def _workload(i: int, version: str, args: list[str], tmp: Path) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp, [], image=f"vllm/vllm-openai:v{version}")).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    doc["spec"]["template"]["spec"]["containers"] = [_container(version, args)]
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every case as one workload of one file, judged by one real `check -o json` run: JSON item by name."""
    tmp = tmp_path_factory.mktemp("order")
    items, _ = judge([_workload(i, v, a, tmp) for i, (v, a, _m) in enumerate(CASES)], tmp)
    return items


@pytest.mark.parametrize(("i", "case"), list(enumerate(CASES)))
def test_check_names_first_what_vllm_prints(checked: dict[str, dict], i: int, case: tuple) -> None:
    version, args, message = case
    item = checked[f"case-{i}"]
    refusals = [f["reason"] for f in item["findings"] if " refuses " in f["reason"]]
    assert item["prediction"]["outcome"] == "argument_refused", item
    assert refusals and f'"{message}"' in refusals[0], refusals
    c = _container(version, args)  # the rehearsal pod, from the same container: exit 2 on the same words
    got = plan(find_server({"containers": [c]}), c, make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S",
                                                                                    "count": 1}}, "t"))
    assert isinstance(got, Refusal) and got.stage == "argparse", got
    assert got.error.splitlines()[-1] == f"vllm serve: error: {message}"


def test_plan_says_the_exit_of_the_refusal_vllm_prints(tmp_path: Path) -> None:
    """An ambiguous option after a StoreBoolean's bad word: argparse stops at the ambiguity (exit 2) before it reads
    the word, whose ValueError would exit 1."""
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(_workload(0, *CASES[3][:2], tmp_path)))
    out = run_cli("plan", "-f", str(path)).stdout
    assert re.search(r"^current:  argument_refused .*\(exit 2\)", out, re.M), out
