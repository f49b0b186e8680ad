"""The popular public AWQ checkpoints listed in scripts/awq_marlin_checkpoints.yaml are in the packaged table at every
TP their shapes divide into, so their first estimate reads it instead of replaying the load (~10 ms)."""

from __future__ import annotations

from pathlib import Path

import yaml

from vllm_remedy import hub
from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory.awq_marlin_load import applies, replay, replay_inputs, replayed, simulate
from vllm_remedy.vllm.memory.awq_marlin_table import REPLAYED

ROOT = Path(__file__).resolve().parents[3]
LISTED = yaml.safe_load((ROOT / "scripts" / "awq_marlin_checkpoints.yaml").read_text())["checkpoints"]


def test_each_listed_checkpoint_cites_its_hub_config_and_is_in_the_table() -> None:
    assert {entry["repo"] for entry in LISTED} >= {"Qwen/Qwen2.5-72B-Instruct-AWQ", "TheBloke/Llama-2-70B-Chat-AWQ"}
    for entry in LISTED:
        assert entry["url"] == f"https://huggingface.co/{entry['repo']}/blob/main/config.json"
        assert entry["copy"]
        model = catalog.ModelSpec.from_hf_config(entry["config"], entry["repo"])
        tps = [tp for tp in (1, 2, 4, 8) if applies(model, None, (8, 0), (0, 28, 0), tp)]
        assert tps, entry["repo"]
        for tp in tps:
            assert replay_inputs(model, tp, 2) in REPLAYED, (entry["repo"], tp)


def test_the_published_padded_72b_read_as_model_config_is_looked_up_not_replayed() -> None:
    path = str(ROOT / "tests" / "data" / "configs" / "Qwen2.5-72B-Instruct-AWQ.json")
    model = hub.spec_from_config(hub.config_from_json(hub.read_file(path, path), path), path, path)
    simulate.cache_clear()
    replayed.cache_clear()
    for tp in (1, 2, 4, 8):
        assert replay(model, tp, 2) == REPLAYED[replay_inputs(model, tp, 2)]
    assert simulate.cache_info().misses == 0 and replayed.cache_info().misses == 0
