"""A ``rope_scaling`` vLLM fails on while it loads the config is no start to size (``config_bounds.rope``).

The review's reproductions: ``--hf-overrides '{"rope_scaling":{"factor":2.0}}'`` on Llama-3.1 at 0.10.1 was predicted
``max_len_exceeds_model`` at a 131,072 cap, but 0.10.1 applies the overrides with ``config.update`` and then
``patch_rope_scaling``, which raises "rope_scaling should have a 'rope_type' key" (transformers_utils/config.py@0.10.1
l.243, l.509-515); a YaRN ``rope_scaling`` without ``original_max_position_embeddings`` was predicted to fit, but the
max-length derivation indexes that key (config/__init__.py@0.10.1 l.2921, config/model.py@0.12.0 l.2219: KeyError).
0.12.0 applies dict-valued overrides after the patch and its length reads the patched ``rope_parameters``
(config/model.py@0.12.0 l.457-510, l.2200), so Llama-3.1's llama3 parameters stand and its 131,072 cap too.
A fractional ``num_hidden_layers`` (vLLM's ``make_layers`` runs ``range`` over it, model_executor/models/utils.py@0.10.1
l.643) was already refused on main; it is kept here as the third case of the review.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import judge
from fixtures.vllm_deployment import manifest
from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.vllm import catalog, hf_overrides, model_len

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "Qwen/Qwen2.5-7B-Instruct"
CONFIGS = {e["id"]: e["config"] for e in catalog._load("models.yaml")["models"] if e["id"] in (LLAMA, QWEN)}
NO_TYPE = {"rope_scaling": {"factor": 2.0}}
YARN_NO_BASE = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
HALF_LAYER = {"num_hidden_layers": 16.5}
NO_TYPE_WHY = "LlamaForCausalLM: rope_scaling = {'factor': 2.0} names no rope_type (nor the legacy type): vLLM refuses"
YARN_WHY = ("Qwen2ForCausalLM: rope_scaling = {'rope_type': 'yarn', 'factor': 4.0} is YaRN without "
            "original_max_position_embeddings: vLLM's max-length derivation indexes")
HALF_WHY = "LlamaForCausalLM: num_hidden_layers = 16.5 is not a whole number of elements"


@pytest.mark.parametrize(("model", "change", "why"), [(LLAMA, NO_TYPE, NO_TYPE_WHY), (QWEN, YARN_NO_BASE, YARN_WHY),
                                                       (LLAMA, HALF_LAYER, HALF_WHY)])
def test_the_hub_config_is_one_cannot_predict_line(model, change, why):
    with pytest.raises(UserError) as refused:
        hub.spec_from_json(json.dumps({**CONFIGS[model], **change}), "cfg", "cfg")
    assert str(refused.value).startswith(f"cannot predict {why}"), str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("version", [(0, 10, 0), (0, 10, 1), (0, 11, 0)])
def test_an_override_without_a_type_is_the_model_configs_refusal_on_0_10_and_0_11(version):
    """config.update then patch_rope_scaling_dict (transformers_utils/config.py@0.11.0 l.631-638, l.390-391): vLLM's
    refusal, predicted as such (hostile 11 #4), not "cannot predict"."""
    spec = hf_overrides.applied(catalog.repo_model(LLAMA, None), LLAMA, None, {"hf-overrides": json.dumps(NO_TYPE)},
                                version)
    assert spec.load_refusal == "ValueError: rope_scaling should have a 'rope_type' key"


@pytest.mark.parametrize(("model", "change", "why"), [(QWEN, YARN_NO_BASE, YARN_WHY)])
def test_the_override_on_0_10_1_is_refused_where_vllm_refuses(model, change, why):
    with pytest.raises(UserError) as refused:
        hf_overrides.applied(catalog.repo_model(model, None), model, None, {"hf-overrides": json.dumps(change)},
                             (0, 10, 1))
    assert str(refused.value).startswith(f"--hf-overrides: {why}"), str(refused.value)


def test_0_12_keeps_llama3_parameters_and_their_cap():
    """0.12.0 sets a dict override after patching rope_parameters: the llama3 type stays, unscaled, 131,072."""
    spec = hf_overrides.applied(catalog.repo_model(LLAMA, None), LLAMA, None, {"hf-overrides": json.dumps(NO_TYPE)},
                                (0, 12, 0))
    assert model_len.cap(spec, "0.12.0", False) == 131072


@pytest.mark.parametrize(("scaling", "caps"), [
    ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
     {"0.10.1": 131072, "0.12.0": 131072, "0.28.0": 32768}),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192},
     {"0.10.1": 32768, "0.12.0": 32768, "0.28.0": 32768})])
def test_a_yarn_config_with_its_base_is_still_sized_per_release(scaling, caps):
    """The refusal does not reach a YaRN config that states its base (legacy ``type`` key too): each release's cap."""
    spec = hub.spec_from_json(json.dumps({**CONFIGS[QWEN], "rope_scaling": scaling}), "cfg", "cfg")
    assert {v: model_len.cap(spec, v, False) for v in caps} == caps


def test_check_judges_the_three_reviewed_configs_in_one_run(tmp_path):
    cases = [("no-type", LLAMA, NO_TYPE, "262144", "v0.10.1"), ("yarn-no-base", QWEN, YARN_NO_BASE, "65536", "v0.10.1"),
             ("half-layer", LLAMA, HALF_LAYER, "8192", "v0.10.1"), ("no-type-012", LLAMA, NO_TYPE, "262144", "v0.12.0")]
    docs = []
    for name, model, change, length, tag in cases:
        doc = yaml.safe_load(Path(manifest(tmp_path, ["--max-model-len", length, "--hf-overrides", json.dumps(change)],
                                           gpu="NVIDIA-L4", image=f"vllm/vllm-openai:{tag}", model=model)).read_text())
        doc["metadata"]["name"] = name
        docs.append(doc)
    items, _ = judge(docs, tmp_path)
    assert items["no-type"]["prediction"]["outcome"] == "config_refused", items["no-type"]  # vLLM's refusal
    assert "rope_scaling should have a 'rope_type' key" in str(items["no-type"]), items["no-type"]
    for name, why in (("yarn-no-base", YARN_WHY), ("half-layer", HALF_WHY)):
        item = items[name]
        assert item["prediction"]["outcome"] == "unknown", item
        reasons = [f["reason"] for f in item["findings"] if f["check"] == "model"]
        assert any(r.startswith(f"cannot predict: --hf-overrides: {why}") for r in reasons), item["findings"]
    assert items["no-type-012"]["prediction"]["outcome"] == "max_len_exceeds_model", items["no-type-012"]
