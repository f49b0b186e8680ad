"""A GPTQ group split across TP ranks is refused where no kernel of that card, dtype and release takes it
(``mp_split``: gptq.py / Marlin refuse it, Machete on capability 9.0 and Exllama on float16 from 0.6.6 do not).

Config (tests/data/configs/SOURCES.md): TheBloke/TinyLlama-1.1B-Chat-v1.0-GPTQ (group 128, desc_act true on main) and
the same with desc_act false. Its down_proj (5632 inputs) is 704 per GPU at TP 8: 5.5 groups of 128, a multiple of 64
(Machete's input rule), with 2048 outputs (a multiple of 128)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_remedy.remedies.budget import BudgetRequest, plan_budget, tp_sizes
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.settings import split_run, tp_split_problem
from vllm_remedy.vllm.outcomes import Outcome

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
A100, H100, T4 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "Tesla-T4"


def gptq(**changes: object) -> ModelSpec:
    config = json.loads((CONFIGS / "TinyLlama-1.1B-Chat-v1.0-GPTQ.json").read_text())
    config["quantization_config"].update(changes)
    return ModelSpec.from_hf_config(config, "acme/TinyLlama-1.1B-Chat-v1.0-GPTQ")


def problem(model: ModelSpec, gpu: str, version: str, tp: int = 8, dtype: str = "auto") -> str | None:
    s = EngineSettings(version=version, tp=tp, dtype=dtype)
    return tp_split_problem(model, tp, split_run(model, catalog.gpu(gpu), s))


SPLIT = "tensor-parallel-size: 8 splits down_proj's 5632 input channels into 704 per GPU, which the gptq_marlin group"


@pytest.mark.parametrize(("gpu", "version", "dtype", "says"), [
    (A100, "0.11.0", "auto", "Machete needs capability 9.0, Exllama runs only float16, not bfloat16"),
    (A100, "0.6.5", "float16", "Exllama arrives in 0.6.6"),
    (H100, "0.6.1", "auto", "Marlin needs whole groups per GPU (verify_marlin_supports_shape)"),
    (A100, "0.21.0", "auto", "Machete needs capability 9.0, Exllama runs only float16"),
])
def test_refused_where_no_kernel_takes_the_split_group(gpu, version, dtype, says):
    got = problem(gptq(desc_act=False), gpu, version, dtype=dtype)
    assert got is not None and got.startswith(SPLIT) and says in got, got


@pytest.mark.parametrize(("gpu", "version", "dtype"), [
    (H100, "0.11.0", "auto"),  # Machete: 704 = 11 x 64 inputs, 2048 = 16 x 128 outputs
    (A100, "0.11.0", "float16"),  # Exllama checks the group against the full 5632 inputs only
    (A100, "0.6.6", "float16"),
    (A100, "0.6.2", "auto"),  # 0.6.2's Marlin checks swapped sizes: not judged
    (A100, "0.24.0", "auto"),  # Humming, an optional package, takes any layer: not judged
])
def test_accepted_where_a_kernel_takes_it_or_not_judged(gpu, version, dtype):
    assert problem(gptq(desc_act=False), gpu, version, dtype=dtype) is None


def test_act_order_keeps_machete_and_exllama_off_a_split_input():
    """The published main branch (desc_act true): Machete and Exllama refuse a g_idx on a row-parallel input."""
    model = gptq()
    assert (model.mp_linear, model.act_order) == ("gptq_marlin", True)
    got = problem(model, H100, "0.11.0", dtype="float16")
    assert got is not None and "Machete refuses act order on a split input, Exllama refuses act order" in got, got


def test_gptqs_own_kernel_on_a_card_below_marlin():
    """A T4 (7.5) is below gptq_marlin's 8.0 up to 0.13.0: gptq.py runs the layer and raises; from 0.14.0 Marlin's
    minimum is 7.5 and Exllama takes float16."""
    model = gptq(desc_act=False)
    got = problem(model, T4, "0.10.0", dtype="float16")
    assert got is not None and "GPTQ's own kernel needs whole groups per GPU" in got, got
    assert problem(model, T4, "0.14.0", dtype="float16") is None


def test_unknown_run_and_smaller_tp_are_not_judged():
    model = gptq(desc_act=False)
    assert tp_split_problem(model, 8) is None  # no card, dtype or release: the card-free rules only
    assert problem(model, A100, "0.11.0", tp=4) is None  # 1408 = 11 x 128


def test_the_estimate_refuses_it_and_the_planner_does_not_offer_it():
    model = gptq(desc_act=False)
    assert estimate(model, catalog.gpu(A100), EngineSettings(version="0.11.0", tp=8)).outcome is Outcome.CONFIG_REFUSED
    a100, h100 = catalog.gpu(A100), catalog.gpu(H100)
    s = EngineSettings(version="0.11.0")
    assert tp_sizes(model, 1, 8, a100, s) == [1, 2, 4]
    assert tp_sizes(model, 1, 8, h100, s) == [1, 2, 4, 8]


def test_the_planner_note_quotes_the_quantization_rule():
    """Before, the note said no size "divides 32 attention / 4 KV heads", which 8 does."""
    plan = plan_budget(BudgetRequest(gptq(), catalog.gpu(A100), EngineSettings(version="0.11.0", tp=4), node_gpus=8))
    notes = [n for n in plan.notes if n.startswith("tensor-parallel-size above 4 not offered")]
    assert notes and notes[0].startswith("tensor-parallel-size above 4 not offered: " + SPLIT), plan.notes
    assert notes[0].endswith("; no other size from 5 to 8 GPUs divides 32 attention / 4 KV heads"), notes


def test_the_cli_refuses_tp_8_for_the_published_checkpoint(cli):
    """The real ``vllm-remedy estimate`` on the published config.json: desc_act true keeps every kernel but Marlin off
    the split input, so TP 8 is refused on an H100 too."""
    path = CONFIGS / "TinyLlama-1.1B-Chat-v1.0-GPTQ.json"
    got = cli("estimate", "--model-config", str(path), "--gpu", H100, "--vllm-version", "0.11.0", "--tp", "8",
              "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["outcome"] == "config_refused", data
    assert data["refusal"].startswith(f"{SPLIT} size 128 does not divide: no kernel takes it"), data["refusal"]
    ok = cli("estimate", "--model-config", str(path), "--gpu", H100, "--vllm-version", "0.11.0", "--tp", "4")
    assert ok.returncode == 0, ok.stderr
