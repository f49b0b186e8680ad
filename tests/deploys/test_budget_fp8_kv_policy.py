"""``deploys/budget.py`` on a pod whose ``--kv-cache-dtype auto`` runs the fp8 cache the policy forbids, with no
16-bit ``--kv-cache-dtype`` the policy allows (real pyinfra CLI on the rehearsal cluster).

A ModelOpt checkpoint whose KV-cache scheme is FP8 runs fp8_e4m3 under ``auto`` from vLLM 0.14.0. Every rung the
planner could take keeps that cache; it ranked the unchanged unit as a fitting "(no change)" step, which the deploy
took as its fix. Now the plan has no step (``no_fitting_change``, the policy keys named), the deploy refuses with
the policy's problem in one line, writes nothing (``--dry`` shows no diff, ``-y`` leaves the object as it was) and
exits 1.
"""

from __future__ import annotations

import json
from typing import Any

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, deployment, policy_file, rolled_out
from fixtures.dry_run import diffs
from fixtures.hf_hub_server import SMOLLM2_CONFIG
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import HOST, host_out, quiet, vllm_runtime, write_inventory

rehearsal = pyinfra_run.rehearsal
PRIVATE = "acme-corp/SmolLM2-1.7B-ModelOpt-FP8"
CONFIG = {**SMOLLM2_CONFIG,
          "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}
ARGS = [PRIVATE, "--max-model-len", "8192", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]


def _serve(dep: dict[str, Any]) -> None:
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "vllm/vllm-openai:v0.30.0"
    container["args"] = list(ARGS)


def test_the_budget_deploy_refuses_a_forbidden_fp8_cache_no_flag_clears(rehearsal: Rehearsal) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mo-config", "namespace": "llm"},
                  "data": {"config.json": json.dumps(CONFIG)}}
    rehearsal.cluster.apply_seed({"models": [{"id": PRIVATE, "config": CONFIG}],
                                  "objects": [{"resource": "configmaps", "object": config_map}]})
    vllm_runtime(rehearsal)
    rehearsal.change(_serve, change_cause="serve the ModelOpt FP8 checkpoint on 0.30.0")
    rolled_out(rehearsal)
    before = quiet(rehearsal)
    target = f"target:\n  namespaces: [llm]\n  deployments: [llama-8b]\n  models: [{PRIVATE}]\nknown_good: []\n"
    policy = policy_file(rehearsal.tmp, target + "model_config:\n  config_map: mo-config\n")
    inv = write_inventory(rehearsal.tmp, HOST, policy=policy, kubeconfig=str(rehearsal.kubeconfig))
    dry = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert diffs(dry.stderr) == [], dry.stderr  # no change to show: none clears the fp8 cache
    applied = rehearsal.pyinfra(inv, BUDGET, "-y")
    assert applied.returncode == 1, applied.stderr
    lines = host_out(applied.stderr)
    said = [line for line in lines if "kv-cache-dtype auto runs fp8_e4m3 on this checkpoint" in line]
    assert said and ("no --kv-cache-dtype this release and policy accept keeps a 16-bit cache: allow bfloat16 in the "
                     "policy's flags.kv-cache-dtype.allowed, or allow an fp8 KV cache (kv_cache_fp8)") in said[0], lines
    after = deployment(rehearsal)
    assert after["spec"]["template"] == before["spec"]["template"], after["spec"]["template"]
    assert after["metadata"].get("generation") == before["metadata"].get("generation")
