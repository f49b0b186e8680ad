"""Resolving an AWQ checkpoint's config does the AWQ Marlin load replay, so the estimates after it stay fast.

The promise is "an estimate stays under 5 ms once the config is resolved": for a shape outside the packaged table
on 0.26-0.29 the replay costs ~10 ms, so it belongs to resolution (``load_model_source``), written to the disk memo,
and the estimate must find it without replaying. Checked by the replay's own cache counters, not by a clock.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from fixtures.awq_warm import CONFIGS, cold_memo, estimate_replays_nothing, yarn_72b
from vllm_remedy.commands._engine_args import load_configured, load_model_source
from vllm_remedy.vllm.memory import awq_marlin_load
from vllm_remedy.vllm.memory.awq_marlin_table import REPLAYED


def test_an_uncatalogued_awq_config_is_replayed_when_resolved_not_when_estimated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cold_memo(monkeypatch, tmp_path / "hf")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(yarn_72b()))
    spec, source = load_model_source(argparse.Namespace(model=None, model_config=str(path)))
    assert source == str(path)
    assert tuple(awq_marlin_load.replay_inputs(spec, 2, 2)) not in REPLAYED
    warmed = estimate_replays_nothing(spec, {"tensor-parallel-size": "2", "max-model-len": "32768"}, "0.28.0")
    assert warmed >= 2  # TP 1 and 2 at least (the 72B's shapes divide at 1, 2, 4 and 8)


def test_with_hf_overrides_the_overridden_shape_is_replayed_when_resolved_and_the_read_one_is_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_configured`` replays the spec the estimate sizes (``--hf-overrides`` applied), not the config as read:
    with the base warmed instead, the overridden shape's replay landed in the estimate (hostile review 14, F10)."""
    cold_memo(monkeypatch, tmp_path / "hf")
    config = json.loads((CONFIGS / "Qwen2.5-7B-Instruct-AWQ.json").read_text())
    config["num_hidden_layers"] = 23  # shapes outside the packaged table, as read and as overridden (21 layers)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    flags = {"hf-overrides": '{"num_hidden_layers": 21}', "max-model-len": "8192"}
    args = argparse.Namespace(model=None, model_config=str(path), revision=None)
    spec, _ = load_configured(args, flags, "0.27.0")
    assert spec.num_layers == 21
    warmed = estimate_replays_nothing(spec, flags, "0.27.0")
    assert warmed >= 1
    base = load_model_source(args, warm=False)[0]
    assert base.num_layers == 23
    awq_marlin_load.simulate(awq_marlin_load.replay_inputs(base, 1, 2))
    assert awq_marlin_load.simulate.cache_info().misses == warmed + 1  # the shape read was never replayed
