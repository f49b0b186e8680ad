"""Starts vLLM refuses at config time (a --max-model-len above the model's maximum, bfloat16 below capability 8.0)
show no KV figures anywhere, as ``estimate`` does (review 3, M3 and L4): ``check -o json``'s prediction, ``plan``'s
current line; and ``plan -f`` reads the Deployment's VLLM_ALLOW_LONG_MAX_MODEL_LEN as check does (review 3, M4)."""

from __future__ import annotations

import json

import pytest

from fixtures.vllm_deployment import LLAMA, manifest

SIZING = ("kv_cache_gib", "kv_cache_tokens", "gpu_blocks", "max_concurrency")


REFUSED = [
    pytest.param(["--max-model-len", "200000"], {}, "max_len_exceeds_model", id="above-the-models-maximum"),
    pytest.param(["--dtype", "bfloat16"], {"gpu": "Tesla-T4", "model": "meta-llama/Llama-3.2-1B-Instruct"},
                 "dtype_unsupported", id="bfloat16-on-a-t4"),
]


@pytest.mark.parametrize(("args", "where", "outcome"), REFUSED)
def test_check_json_has_no_kv_figures_for_a_refused_start(cli, tmp_path, args, where, outcome):
    got = cli("check", "-f", manifest(tmp_path, args, **where), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    item = json.loads(got.stdout)["items"][0]
    estimate = item["prediction"]["estimate"]
    assert (item["status"], estimate["outcome"]) == ("fail", outcome)
    assert {k: estimate[k] for k in SIZING} == dict.fromkeys(SIZING), estimate
    assert item["prediction"]["note"].startswith("--max-model-len 200,000 is above" if outcome.startswith("max")
                                                 else "vLLM refuses bfloat16 on the Tesla-T4")


@pytest.mark.parametrize(("args", "where", "outcome"), REFUSED)
def test_plan_shows_the_current_start_as_not_sized(cli, tmp_path, args, where, outcome):
    got = cli("plan", "-f", manifest(tmp_path, args, **where))
    assert got.returncode == 1, got.stderr
    current = got.stdout.splitlines()[2]
    assert current.startswith(f"current:  {outcome} at max-model-len "), current
    assert current.endswith("not sized: vLLM refuses the start at config time, before the KV cache, nothing is "
                            "loaded") and "tokens" not in current and "peak" not in current, current
    data = json.loads(cli("plan", "-f", manifest(tmp_path, args, **where), "-o", "json").stdout)
    assert {k: data["current"][k] for k in SIZING} == dict.fromkeys(SIZING)
    assert data["steps"] and data["steps"][0]["prediction"]["kv_cache_tokens"] > 0  # a fix is still sized


def test_estimate_text_for_a_dtype_refusal_shows_only_what_vllm_reached(cli):
    got = cli("estimate", "--model", "meta-llama/Llama-3.2-1B-Instruct", "--gpu", "Tesla-T4", "--vllm-version",
              "0.8.5", "--dtype", "bfloat16")
    assert got.returncode == 0, got.stderr
    rows = {line.split("  ", 1)[0]: line.split("  ", 1)[1].strip() for line in got.stdout.splitlines() if line}
    assert list(rows) == ["outcome", "model / GPU / vLLM", "max model len", "memory", "device memory"], rows
    # the T4's context as its logs measure it (catalog context_gib)
    assert rows["device memory"] == ("0.11 of 14.58 GiB: the worker's CUDA context (and any other process), nothing "
                                     "loaded")


ALLOW = [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"}]


def test_plan_reads_the_deployments_allow_long_env_as_check_does(cli, tmp_path):
    path = manifest(tmp_path, ["--max-model-len", "200000"], env=ALLOW)
    check = json.loads(cli("check", "-f", path, "-o", "json").stdout)["items"][0]
    assert check["prediction"]["outcome"] == "max_len_exceeds_kv"  # the env var turns the refusal into a warning
    got = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    assert got["current"]["outcome"] == "max_len_exceeds_kv", got["current"]
    assert "above the allowed 131072" not in got["problem"], got["problem"]
    unset = json.loads(cli("plan", "-f", manifest(tmp_path, ["--max-model-len", "200000"]), "-o", "json").stdout)
    assert unset["current"]["outcome"] == "max_len_exceeds_model"


def test_plan_says_when_the_env_var_cannot_be_read(cli, tmp_path):
    secret = [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    got = cli("plan", "-f", manifest(tmp_path, ["--max-model-len", "200000"], env=secret))
    assert "note: whether vLLM refuses --max-model-len 200,000 above the model's 131,072" in got.stdout, got.stdout


def test_plan_words_auto_as_auto_not_as_an_implicit_length(cli):
    """``--max-model-len auto`` resolved to 27,072 on an L4 was reported as "implicit (131,072 from the model)" and
    each rung's reason said "131,072 does not" as if it had been asked for (review 3, L5)."""
    got = cli("plan", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--max-model-len", "auto", "--vllm-version", "0.14.0")
    assert got.returncode == 1, got.stderr
    problem = got.stdout.splitlines()[1]
    assert "implicit" not in problem and ("max-model-len is auto (vLLM sizes it to what the KV cache holds: 27,072 "
                                          "here, up to the model's 131,072): set it explicitly") in problem, problem
    assert "; 131,072 does not" not in got.stdout and "the model's 131,072 does not" in got.stdout, got.stdout


@pytest.mark.parametrize(("image", "value", "literal"), [("vllm/vllm-openai:v0.11.0", "16Ki", "16384"),
                                                         ("vllm/vllm-openai:v0.8.3", "16k", "16000"),
                                                         ("vllm/vllm-openai:v0.8.5", "auto", None)])
def test_plan_on_a_refused_spelling_proposes_the_literal(cli, tmp_path, image, value, literal):
    """plan -f exited 2 with no plan for a spelling the release's parser refuses, though the fix is one token
    (review 3, M8c): it plans with the literal the spelling means and every step writes a literal."""
    got = cli("plan", "-f", manifest(tmp_path, ["--max-model-len", value], image=image), "-o", "json")
    assert got.returncode == 1, got.stderr
    data = json.loads(got.stdout)
    assert data["verdict"] == "change" and data["steps"], data
    assert "(exit 2: the pod never starts)" in data["problem"] and f"'{value}'" in data["notes"][0], data
    for step in data["steps"]:
        assert step["set"]["max-model-len"].isdigit(), step
    if literal is not None:
        assert data["steps"][0]["set"]["max-model-len"] == literal and data["current"]["max_model_len"] == int(literal)


def test_plan_of_a_spelling_with_no_clear_number_is_argparse_s_refusal(cli, tmp_path):
    """`lots` means no number, so no literal is planned for it: plan predicts the refused start as check does (not a
    bad-input stop), plans without the flag, and every step writes an explicit length."""
    got = cli("plan", "-f", manifest(tmp_path, ["--max-model-len", "lots"]), "-o", "json")
    assert got.returncode == 1, got.stderr
    data = json.loads(got.stdout)
    assert data["current"]["as_written"] == "argument_refused", data["current"]
    assert data["steps"] and all(step["set"]["max-model-len"].isdigit() for step in data["steps"]), data["steps"]


def test_check_reports_a_refused_spelling_as_an_error_with_the_literal_fix(cli, tmp_path):
    got = cli("check", "-f", manifest(tmp_path, ["--max-model-len", "16Ki"]))
    assert got.returncode == 1, got.stderr
    lines = got.stdout.splitlines()
    assert lines[1].startswith("  flags [error]: max-model-len: vLLM 0.11.0 refuses '16Ki' at argument parsing") and \
        lines[1].endswith("(exit 2: the pod never starts)"), lines
    assert lines[2].startswith("  smallest fix (planner): --max-model-len 16384 (predicted fits"), lines
