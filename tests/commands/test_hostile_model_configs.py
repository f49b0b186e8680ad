"""A model config no model is built from, and a start two config-time refusals stop, answered without a traceback.

A config (``--hf-overrides``, ``--model-config``, the Hub's config.json: one spec builder, ``ModelSpec.from_hf_config``)
whose head has no element (``hidden_size`` below ``num_attention_heads``), whose KV heads do not divide the heads, or
whose weights or rotary cache no GPU holds (``vllm.config_bounds``) crashed every view: a KV block of 0 bytes
(ZeroDivisionError), a bar of 4e22 GiB (OverflowError, MemoryError). It is now one "cannot predict <arch>: <key> =
<value>" line (exit 2) and an ``[unknown]`` finding in ``check``. A workload whose --max-model-len is above the model's
maximum and whose TP size vLLM refuses made ``plan`` and ``check`` exit 2 ("bad input", the other workloads of the file
unchecked) while ``estimate`` predicted ``max_len_exceeds_model``, the check vLLM runs first: they now plan from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures.vllm_deployment import manifest
from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.policy.loader import load_policy
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget
from vllm_remedy.vllm import catalog, hf_overrides
from vllm_remedy.vllm.memory import EngineSettings, estimate

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "Qwen/Qwen2.5-7B-Instruct"
LLAMA_CONFIG = next(e["config"] for e in catalog._load("models.yaml")["models"] if e["id"] == LLAMA)
DEFAULT_POLICY = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"
BIG = 99999999999999999999999
#: (the config change, the start of the reason after "cannot predict LlamaForCausalLM: "): the review's reproductions
#: (ZeroDivisionError, OverflowError, MemoryError before) and the other shapes ``config_bounds`` refuses.
HOSTILE = [
    ({"hidden_size": 1}, "hidden_size = 1 over num_attention_heads = 32 gives a head_dim of 0"),
    ({"hidden_size": 16}, "hidden_size = 16 over num_attention_heads = 32 gives a head_dim of 0"),
    ({"hidden_size": 31}, "hidden_size = 31 over num_attention_heads = 32 gives a head_dim of 0"),
    ({"hidden_size": 4096, "num_attention_heads": 8192}, "hidden_size = 4096 over num_attention_heads = 8192 gives"),
    ({"num_attention_heads": 9000, "num_key_value_heads": 9000}, "hidden_size = 4096 over num_attention_heads = 9000"),
    ({"num_hidden_layers": BIG}, f"num_hidden_layers = {BIG}, vocab_size = 128256, "),
    ({"max_position_embeddings": BIG}, f"max_position_embeddings = {BIG} gives a maximum length of 1e+23, above int64"),
    ({"vocab_size": 99999999999999}, "vocab_size = 99999999999999, intermediate_size = 14336, "),
    ({"max_position_embeddings": 10**13}, "max_position_embeddings = 10000000000000 gives a maximum length of 1e+13: "
                                          "the rotary cache"),
    ({"num_key_value_heads": 7}, "num_key_value_heads = 7 does not divide num_attention_heads = 32"),
    ({"num_key_value_heads": 64}, "num_key_value_heads = 64 does not divide num_attention_heads = 32"),
    ({"hidden_size": 4096.5}, "hidden_size = 4096.5 is not a whole number of elements"),
]
ARCH = "LlamaForCausalLM"


@pytest.mark.parametrize(("change", "reason"), HOSTILE)
def test_a_config_no_model_is_built_from_is_one_cannot_predict_line(change, reason):
    with pytest.raises(UserError) as refused:
        hub.spec_from_json(json.dumps({**LLAMA_CONFIG, **change}), "cfg", "cfg")
    assert str(refused.value).startswith(f"cannot predict {ARCH}: {reason}"), str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(("change", "reason"), HOSTILE)
def test_the_same_config_through_hf_overrides_names_the_flag(change, reason):
    """The overrides are applied to the catalog's config and rebuilt by the same builder; a refused config is the
    answer even where a key it sets is never reached (9000 KV heads: the head is refused first)."""
    spec = catalog.repo_model(LLAMA, None)
    flags = {"hf-overrides": json.dumps(change)}
    with pytest.raises(UserError) as refused:
        hf_overrides.applied(spec, LLAMA, None, flags, (0, 10, 1))
    assert str(refused.value).startswith(f"--hf-overrides: {ARCH}: {reason}"), str(refused.value)


def test_every_catalog_model_is_still_built():
    for entry in catalog._load("models.yaml")["models"]:
        catalog.ModelSpec.from_hf_config(entry["config"], entry["id"], params_b=float(entry["params_b"]))


def test_plan_without_a_tp_size_vllm_takes_refuses_no_rung_and_says_why(tmp_path):
    """TP 3 of Qwen2.5-7B's 28 heads, the policy allowing only 3: no rung starts (each would keep the refused size),
    whichever refusal vLLM prints first; it was "bad input" (the TP refusal escaping ``settings.resolve``)."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: {DEFAULT_POLICY}\nflags:\n  tensor-parallel-size: {{min: 3, max: 3}}\n")
    model, gpu = catalog.model(QWEN), catalog.gpu("NVIDIA-L4")
    for length, outcome in (("65536", "max_len_exceeds_model"), ("8192", "config_refused")):
        settings = EngineSettings.from_flags({"max-model-len": length, "tensor-parallel-size": "3"}, "0.10.1")
        assert estimate(model, gpu, settings).start == outcome
        plan = plan_budget(BudgetRequest(model, gpu, settings, policy=load_policy(policy), node_gpus=4))
        assert plan.verdict == "no_fitting_change" and not plan.steps, plan
        assert plan.current.start == outcome
        assert "no tensor-parallel-size within the bounds: no size from 3 to 3 GPUs divides 28 attention" in " ".join(
            plan.notes)


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, dict], str]:
    """One real `check -o json` over one file: a healthy Llama, each hostile override as its own Deployment, and
    Qwen2.5-7B at --max-model-len 65536 on TP 3 of 4 GPUs (exit code, items by name, stderr)."""
    tmp = tmp_path_factory.mktemp("hostile")
    docs = []
    cases = [("healthy", LLAMA, ["--max-model-len", "2048"], "1"),
             ("qwen-tp3", QWEN, ["--max-model-len", "65536", "--tensor-parallel-size", "3"], "4")]
    cases += [(f"hostile-{i}", LLAMA, ["--max-model-len", "8192", "--hf-overrides", json.dumps(change)], "1")
              for i, (change, _) in enumerate(HOSTILE)]
    for name, model, args, gpus in cases:
        doc = yaml.safe_load(Path(manifest(tmp, args, gpu="NVIDIA-L4", image="vllm/vllm-openai:v0.10.1",
                                           model=model)).read_text())
        doc["metadata"]["name"] = name
        doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus
        docs.append(doc)
    path = tmp / "all.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    got = run_cli("check", "-f", str(path), "-o", "json")
    items = {item["name"]: item for item in json.loads(got.stdout)["items"]} if got.stdout else {}
    return got.returncode, items, got.stderr


def test_check_judges_every_workload_of_the_file(checked):
    returncode, items, stderr = checked
    assert returncode == 1 and "Traceback" not in stderr, stderr
    assert len(items) == 2 + len(HOSTILE)
    assert items["healthy"]["status"] == "pass", items["healthy"]["findings"]


def test_check_predicts_the_length_refusal_vllm_prints_before_the_tp_one(checked):
    item = checked[1]["qwen-tp3"]
    assert item["status"] == "fail" and item["prediction"]["outcome"] == "max_len_exceeds_model", item
    assert any(f["severity"] == "error" and "max_len_exceeds_model" in f["reason"] for f in item["findings"])
    assert item["fix"] is not None and item["fix"]["set"]["max-model-len"] == "32768", item["fix"]


@pytest.mark.parametrize("index", range(len(HOSTILE)))
def test_check_reports_a_hostile_override_as_unknown(checked, index):
    item = checked[1][f"hostile-{index}"]
    reason = f"cannot predict: --hf-overrides: {ARCH}: {HOSTILE[index][1]}"
    assert item["status"] == "fail" and item["prediction"]["outcome"] == "unknown", item
    assert [(f["severity"], f["reason"][:len(reason)], f["fix"]) for f in item["findings"] if f["check"] == "model"
            ] == [("unknown", reason, "override the config with sizes of a model vLLM builds (the reason names the "
                   "key)")], item["findings"]


def test_estimate_and_plan_answer_in_one_line(cli, tmp_path):
    """The text estimate drew a bar of 4e22 GiB (OverflowError); plan exited 2 on the TP refusal."""
    got = cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.10.1", "--max-model-len",
              "8192", "--hf-overrides", json.dumps({"num_hidden_layers": BIG}))
    assert got.returncode == 2 and got.stdout == "", got.stdout + got.stderr
    assert got.stderr.startswith(f"vllm-remedy: error: cannot predict: --hf-overrides: {ARCH}: num_hidden_layers = ")
    assert got.stderr.count("\n") == 1, got.stderr
    planned = cli("plan", "--model", QWEN, "--gpu", "NVIDIA-L4", "--vllm-version", "0.10.1", "--max-model-len",
                  "65536", "--tp", "3", "-o", "json")
    assert planned.returncode == 1, planned.stdout + planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["current"]["outcome"] == "max_len_exceeds_model", plan["current"]
    assert plan["steps"][0]["set"] == {"max-model-len": "32768", "tensor-parallel-size": "2"}, plan["steps"][0]
