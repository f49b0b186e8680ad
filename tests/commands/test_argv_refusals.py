"""Starts vLLM's argument parser stops (exit 2) show no predictions, and a flag the release does not have is one of
them (review 4, H5 and M4): check lists the refusal without a concurrency or start finding beside it, plan's
"current:" says argument_refused, and a flag in no release's table is refused on the releases read
(``cmdline.release_flags``) — never a valid spelling (alias, ``--no-`` form, underscores, a dotted key, a unique
prefix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge
from fixtures.vllm_deployment import manifest

DUP = ["--max-model-len", "16Ki", "--max-model-len", "16384"]
# (--enable-lor, the prefix of --enable-lora and --enable-lora-bias in 0.11.0, is argparse's "ambiguous option" there:
# tests/commands/test_check_unrecognized_per_release.py)
NO_RELEASE_HAS = [["--bogus-flag"], ["--bogus-flag", "1"], ["--bogus_flag=2"]]
# (--device-memory-utilization arrived in 0.31.0: 0.11.0 refuses it, test_check_unrecognized_per_release.py)
VALID = [
    ["-tp", "1"], ["--tensor_parallel_size", "1"], ["--no-enable-prefix-caching"], ["--max-num-seq", "64"],
    ["--compilation-config.level", "3"], ["--disable-log-requests"], ["--enable-lora"],
]
# Newer than the newest release read (0.34.0), and no release at all: not judged
UNREAD = ["vllm/vllm-openai:v0.35.0", "vllm/vllm-openai:latest"]
MML = (("MML", "16Ki"),)

Key = tuple[tuple[str, ...], str, str, tuple[tuple[str, str], ...] | None]

#: Every check case of this module as (args, image, GPU, env), in one `check` run per output (``checked``).
CASES: list[Key] = [
    (tuple(DUP), "vllm/vllm-openai:v0.11.0", "NVIDIA-L4", None),
    *((("--max-model-len", "4096", *args), "vllm/vllm-openai:v0.11.0", "NVIDIA-L40S", None)
      for args in NO_RELEASE_HAS + VALID),
    *((("--max-model-len", "4096", "--bogus-flag"), image, "NVIDIA-L40S", None) for image in UNREAD),
    (("--max-model-len", "$(MML)"), "vllm/vllm-openai:v0.11.0", "NVIDIA-L40S", MML),
]


def _workload(i: int, args: tuple[str, ...], image: str, gpu: str, env: tuple[tuple[str, str], ...] | None,
              tmp_path: Path) -> dict:
    env_list = None if env is None else [{"name": name, "value": value} for name, value in env]
    doc = yaml.safe_load(Path(manifest(tmp_path, list(args), gpu=gpu, image=image, env=env_list)).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[Key, tuple[str, dict]]:
    """Every check case of this module as one Deployment of one file, judged by one real `check` run per output
    (two CLI starts instead of one or two per case: the suite's time budget), keyed like ``CASES``: (text, JSON
    item). A case that fails has the item status "fail" (what the single file's exit 1 said)."""
    tmp = tmp_path_factory.mktemp("argv")
    keys = list(dict.fromkeys(CASES))
    items, blocks = judge([_workload(i, *key, tmp) for i, key in enumerate(keys)], tmp, text=True)
    return {key: (blocks[f"case-{i}"], items[f"case-{i}"]) for i, key in enumerate(keys)}


def _check(checked: dict, args: list[str], image: str = "vllm/vllm-openai:v0.11.0", gpu: str = "NVIDIA-L40S",
           env: tuple[tuple[str, str], ...] | None = None) -> tuple[str, dict]:
    return checked[(tuple(args), image, gpu, env)]


def test_check_shows_no_prediction_beside_an_argument_refusal(checked):
    text, item = _check(checked, DUP, gpu="NVIDIA-L4")
    assert item["status"] == "fail", text
    assert "exit 2: the pod never starts" in text
    assert "concurrency [error]" not in text and "start [error]" not in text, text
    assert (item["prediction"]["outcome"], item["prediction"]["estimate"]) == ("argument_refused", None), item


def test_plan_current_says_argument_refused(cli, tmp_path):
    path = manifest(tmp_path, DUP, gpu="NVIDIA-L4")
    lines = cli("plan", "-f", path).stdout.splitlines()
    assert lines[2] == ("current:  argument_refused — vLLM's command line stops the start as written (exit 2), "
                        "nothing is loaded")
    data = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    assert data["current"]["as_written"] == "argument_refused"


@pytest.mark.parametrize("args", NO_RELEASE_HAS)
def test_a_flag_no_release_has_is_refused(checked, cli, tmp_path, args):
    text, item = _check(checked, ["--max-model-len", "4096", *args])
    assert item["status"] == "fail", text
    assert f"flags [error]: vLLM 0.11.0 refuses {args[0]} at argument parsing: it has no such flag" in text
    assert "concurrency [error]" not in text
    plan = cli("plan", "-f", manifest(tmp_path, ["--max-model-len", "4096", *args])).stdout  # the first workload only
    assert "remove or correct it (planned without it)" in plan
    assert "remove the flags vLLM 0.11.0 does not have, or correct their spelling" in plan


@pytest.mark.parametrize("args", VALID)
def test_valid_spellings_are_not_refused(checked, args):
    text, _ = _check(checked, ["--max-model-len", "4096", *args])
    assert "it has no such flag" not in text, text


@pytest.mark.parametrize("image", UNREAD)
def test_a_release_the_table_was_not_read_for_is_not_judged(checked, image):
    text, _ = _check(checked, ["--max-model-len", "4096", "--bogus-flag"], image)
    assert "it has no such flag" not in text, text


def test_a_kubernetes_variable_in_args_is_judged_as_expanded(checked):
    """``--max-model-len "$(MML)"`` with env MML=16Ki: Kubernetes hands vLLM 16Ki, which 0.11 refuses (M6)."""
    text, item = _check(checked, ["--max-model-len", "$(MML)"], env=MML)
    assert item["status"] == "fail", text
    assert "refuses '16Ki' at argument parsing" in text and "is not an integer" not in text


def test_drifts_prediction_is_an_argument_refusal_for_a_flag_the_release_lacks(tmp_path):
    from vllm_remedy.remedies.predict import predict_template

    doc = yaml.safe_load(Path(manifest(tmp_path, ["--max-model-len", "4096", "--bogus-flag"])).read_text())
    got = predict_template(doc["spec"]["template"], None)
    assert got.estimate is None and got.refused, got
    assert got.note.startswith("vLLM 0.11.0 refuses --bogus-flag at argument parsing: it has no such flag"), got.note
