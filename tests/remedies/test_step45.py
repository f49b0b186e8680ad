"""Pure step-4/5 remedies: timed toggles, GPU pinning (label variants, capacity, surge), load caps."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, read_toggles
from vllm_remedy.policy import GpuPolicy, LoadShedding, Policy
from vllm_remedy.remedies import enforce_eager as toggle
from vllm_remedy.remedies.load_guard import format_mm_limits, guard_flags, parse_mm_limits
from vllm_remedy.remedies.pin_gpu import plan_pin

KEYS = Keys()
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
ARGS = [MODEL, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90"]


def template(args: list[str] | None = None, selector: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "x"}},
            "spec": {"nodeSelector": dict(selector or {}),
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": ["vllm", "serve"],
                                     "args": list(args or ARGS), "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


# --- toggles ---------------------------------------------------------------------------------------------
def sha256(value: Any) -> str:
    """The digest, computed here independently of the code under test."""
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def test_switch_on_records_expiry_and_exact_argv_and_revert_restores_it() -> None:
    before = template()
    on, notes = toggle.switch_on(before, KEYS, 1_800_000_000, 3600)
    assert on["spec"]["containers"][0]["args"] == [*ARGS, "--enforce-eager"]
    prior = {"args": ARGS, "command": ["vllm", "serve"], "container": "vllm"}
    written = {**prior, "image": "vllm/vllm-openai:v0.8.5"}
    assert notes == {"vllm-remedy.io/enforce-eager-expires": "2027-01-15T09:00:00Z",
                     "vllm-remedy.io/enforce-eager-prior": json.dumps(prior, sort_keys=True, separators=(",", ":")),
                     "vllm-remedy.io/enforce-eager-digest": json.dumps(
                         {"prior": sha256(prior), "written": sha256(written)}, sort_keys=True, separators=(",", ":"))}
    (record,) = read_toggles(KEYS, notes)
    assert toggle.expired(KEYS, notes, 1_800_003_599) == []
    assert toggle.expired(KEYS, notes, 1_800_003_600) == [record]
    undo = toggle.revert(on, KEYS, record)
    assert undo.exact and undo.template == before
    assert undo.annotations == {"vllm-remedy.io/enforce-eager-expires": None,
                                "vllm-remedy.io/enforce-eager-prior": None,
                                "vllm-remedy.io/enforce-eager-digest": None}


def test_revert_keeps_flags_changed_meanwhile_and_drops_only_eager() -> None:
    on, notes = toggle.switch_on(template(), KEYS, 0, 60)
    (record,) = read_toggles(KEYS, notes)
    edited = copy.deepcopy(on)
    edited["spec"]["containers"][0]["args"][2] = "8192"
    undo = toggle.revert(edited, KEYS, record)
    assert not undo.exact
    assert undo.template["spec"]["containers"][0]["args"] == [MODEL, "--max-model-len", "8192",
                                                              "--gpu-memory-utilization", "0.90"]
    assert undo.message.startswith("remove --enforce-eager only: the container changed since it was set")


@pytest.mark.parametrize(("ttl", "seconds"), [(None, 7200), ("30m", 1800), ("2h", 7200), (90, 90)])
def test_ttl_defaults_to_and_is_bounded_by_the_policy(ttl: Any, seconds: int) -> None:
    assert toggle.ttl_seconds(ttl, Policy()) == seconds


@pytest.mark.parametrize(("ttl", "message"), [
    ("3h", "ttl: 3h exceeds the policy's enforce_eager.max_duration 2h (<mapping>)"),
    ("soon", 'ttl: not a duration: \'soon\' (expected e.g. "30m", "2h", "1h30m")'),
])
def test_bad_ttls_are_one_line_errors(ttl: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        toggle.ttl_seconds(ttl, Policy())
    assert str(err.value) == message


@given(st.lists(st.sampled_from(["--max-num-seqs", "32", "--dtype", "auto", "--port", "8001"]), max_size=6))
def test_any_argv_round_trips_through_the_toggle(extra: list[str]) -> None:
    before = template([*ARGS, *extra])
    on, notes = toggle.switch_on(before, KEYS, 0, 60)
    (record,) = read_toggles(KEYS, notes)
    assert toggle.revert(on, KEYS, record).template == before


# --- pin ----------------------------------------------------------------------------------------------------
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def node(name: str, product: str, *, free: bool = True, taint: bool = False, cordoned: bool = False,
         label: str = "nvidia.com/gpu.product") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {label: product}},
            "spec": {"unschedulable": cordoned, "taints": [TAINT] if taint else []},
            "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def holder(name: str, on: str, ours: bool) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "llm", "labels": {"app": "x" if ours else "other"}},
            "spec": {"nodeName": on, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}}


ROLLING = {"replicas": 2, "selector": {"matchLabels": {"app": "x"}},
           "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}


def test_pin_uses_the_value_nodes_carry_and_drops_other_product_keys() -> None:
    nodes = [node("a", "NVIDIA-L40S"), node("b", "NVIDIA-L40S"), node("c", "NVIDIA-L4")]
    plan = plan_pin(template(selector={"cloud.google.com/gke-accelerator": "nvidia-l4", "pool": "gpu"}), ROLLING,
                    nodes, [], "llm", GpuPolicy(), "nvidia-l40s", 1)
    assert plan.refusal is None and plan.strategy is None
    assert plan.template["spec"]["nodeSelector"] == {"pool": "gpu", "nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert (plan.free, plan.capacity_pods, plan.nodes) == (2, 2, ("a", "b"))


def test_shared_and_mig_variants_count_only_when_allowed_or_named() -> None:
    nodes = [node("s", "NVIDIA-L40S-SHARED"), node("m", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")]
    refused = plan_pin(template(), ROLLING, nodes, [], "llm", GpuPolicy(), "NVIDIA-L40S", 1)
    assert refused.refusal is not None and refused.refusal.startswith("no node offers NVIDIA-L40S")
    assert refused.notes == ("s: time-sliced (NVIDIA-L40S-SHARED); not counted (gpu.allow_shared)",)
    shared = plan_pin(template(), ROLLING, nodes, [], "llm", GpuPolicy(allow_shared=True), "NVIDIA-L40S", 1)
    assert shared.template["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S-SHARED"}
    assert plan_pin(template(), ROLLING, nodes, [], "llm", GpuPolicy(), "NVIDIA-A100-SXM4-40GB", 1).refused
    mig = plan_pin(template(), ROLLING, nodes, [], "llm", GpuPolicy(), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", 1)
    assert mig.template["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}


def test_gke_label_key_per_policy() -> None:
    nodes = [node("g", "nvidia-l4", label="cloud.google.com/gke-accelerator", taint=True)]
    tpl = template()
    tpl["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    plan = plan_pin(tpl, ROLLING, nodes, [], "llm", GpuPolicy(label="cloud.google.com/gke-accelerator"),
                    "NVIDIA-L4", 1)
    assert plan.template["spec"]["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    untolerated = plan_pin(template(), ROLLING, nodes, [], "llm",
                           GpuPolicy(label="cloud.google.com/gke-accelerator"), "NVIDIA-L4", 1)
    assert untolerated.refusal == ("no schedulable nvidia-l4 capacity: 1 node(s) labelled "
                                   "cloud.google.com/gke-accelerator=nvidia-l4, 0 free GPU(s), none can take a pod "
                                   "of 1 GPU(s)")


def test_full_nodes_switch_to_max_surge_zero_and_foreign_pods_block_capacity() -> None:
    nodes = [node("a", "NVIDIA-L40S"), node("b", "NVIDIA-L40S")]
    ours = [holder("p1", "a", True), holder("p2", "b", True)]
    old = template(selector={"karpenter.k8s.aws/instance-gpu-name": "l40s"})
    plan = plan_pin(old, ROLLING, nodes, ours, "llm", GpuPolicy(), "NVIDIA-L40S", 1)
    assert plan.strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert (plan.capacity_pods, plan.surge_pods) == (2, 0)
    theirs = [holder("q1", "a", False), holder("q2", "b", False)]
    assert plan_pin(old, ROLLING, nodes, theirs, "llm", GpuPolicy(), "NVIDIA-L40S", 1).refused
    recreate = {**ROLLING, "strategy": {"type": "Recreate"}}
    assert plan_pin(old, recreate, nodes, ours, "llm", GpuPolicy(), "NVIDIA-L40S", 1).strategy is None


def test_gpus_below_tensor_parallel_size_is_refused() -> None:
    plan = plan_pin(template([*ARGS, "--tensor-parallel-size", "2"]), ROLLING, [node("a", "NVIDIA-L40S")], [],
                    "llm", GpuPolicy(), "NVIDIA-L40S", 1)
    assert plan.refusal == "gpus=1 is fewer than --tensor-parallel-size 2 needs"


# --- load guard ---------------------------------------------------------------------------------------------
def test_batched_tokens_cap_compares_with_the_effective_default() -> None:
    shed = LoadShedding(max_num_batched_tokens=4096)
    base = {"max-model-len": "16384"}
    assert guard_flags(base, shed, model=MODEL, version="0.8.5", gpu="NVIDIA-L40S").set == {}
    assert guard_flags({**base, "max-num-batched-tokens": "16384"}, shed, model=MODEL, version="0.8.5",
                       gpu="NVIDIA-L40S").set == {"max-num-batched-tokens": "4096"}
    v0 = guard_flags({**base, "max-num-batched-tokens": "16384"}, shed, model=MODEL, version="0.6.6",
                     gpu="NVIDIA-L40S")
    assert v0.set == {}
    assert v0.notes == ("--max-num-batched-tokens 4096 not applied: without chunked prefill vLLM needs it >= "
                        "--max-model-len 16384",)


@pytest.mark.parametrize(("version", "text"), [("0.6.6", "image=2,video=1"), ("0.8.4", "image=2,video=1"),
                                               ("0.8.5", '{"image":2,"video":1}'), (None, '{"image":2,"video":1}')])
def test_mm_limits_in_the_running_versions_syntax(version: str | None, text: str) -> None:
    assert format_mm_limits({"video": 1, "image": 2}, version) == text
    assert parse_mm_limits(text) == {"image": 2, "video": 1}


def test_mm_and_lora_caps_only_where_they_apply_and_only_lower() -> None:
    shed = LoadShedding(limit_mm_per_prompt={"image": 2}, max_loras=2)
    vl = "Qwen/Qwen2.5-VL-7B-Instruct"
    got = guard_flags({"limit-mm-per-prompt": "image=4,video=1", "enable-lora": "true", "max-loras": "8"}, shed,
                      model=vl, version="0.8.4", gpu=None)
    assert got.set == {"limit-mm-per-prompt": "image=2,video=1", "max-loras": "2"}
    text = guard_flags({}, shed, model=MODEL, version="0.8.5", gpu=None)
    assert text.set == {}
    assert text.notes == (f"--limit-mm-per-prompt: {MODEL} is not a multimodal model",
                          "--max-loras: LoRA is not enabled (--enable-lora)")
    lower = guard_flags({"limit-mm-per-prompt": '{"image":1}'}, shed, model=vl, version="0.9.0", gpu=None)
    assert lower.set == {}
