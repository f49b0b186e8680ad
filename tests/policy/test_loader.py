"""The shipped policies load with exactly the values the runbook states; extends merges and refuses cycles."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.policy import (
    Choices,
    FractionBounds,
    IntBounds,
    Policy,
    load_policies,
    load_policy,
    policy_for,
)

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"
EXTENDS = Path(__file__).resolve().parents[1] / "data" / "policies" / "extends"


def test_default_policy_values() -> None:
    p = load_policy(POLICIES / "default.yaml")
    assert p.name == "default"
    assert p.require_explicit_max_model_len is True
    assert p.flag_bounds("gpu-memory-utilization") == FractionBounds(min=0.5, max=0.95)
    assert p.flag_bounds("tensor-parallel-size") == IntBounds(min=1, max=8)
    assert p.flag_bounds("kv-cache-dtype") == Choices(allowed=("auto",))
    assert p.flag_bounds("max-model-len") is None
    assert p.kv_cache_fp8.allowed is False and p.kv_cache_fp8.evaluated is None
    assert p.gpu.products == () and p.gpu.pinned is False
    assert (p.gpu.label, p.gpu.resource, p.gpu.per_pod, p.gpu.allow_shared) == (
        "nvidia.com/gpu.product", "nvidia.com/gpu", 1, False)
    assert p.known_good == ()
    assert p.peak_concurrency == 8
    assert p.enforce_eager.allowed is True
    assert p.enforce_eager.max_duration == timedelta(hours=2)
    assert p.load_shedding.flags() == {}
    assert p.fallback is None
    assert p.restore.rollout_timeout == timedelta(minutes=15)
    assert p.writes.unanswered_grace == timedelta(seconds=30)
    assert p.confirm.stable_for == timedelta(minutes=30)
    assert p.confirm.min_concurrency_ratio == 1.0
    assert (p.alerts.kv_cache_usage_percent, p.alerts.preemptions_per_minute, p.alerts.for_) == (
        90.0, 1.0, timedelta(minutes=5))
    assert p.gitops == "refuse"
    assert p.annotation_prefix == "vllm-remedy.io/"
    assert p.target.matches("any-namespace", "any-deployment") is True


def test_llama_8b_policy_values() -> None:
    p = load_policy(POLICIES / "llama-8b.yaml")
    assert p.name == "llama-8b"
    assert (p.max_model_len, p.gpu_memory_utilization, p.max_num_seqs) == (16384, 0.90, 64)
    assert p.flag_bounds("max-model-len") == IntBounds(min=4096, max=16384, preferred=16384)
    assert p.flag_bounds("max_num_seqs") == IntBounds(min=16, max=128, preferred=64)
    assert p.flag_bounds("--max-num-batched-tokens") == IntBounds(min=2048, max=16384)
    assert p.flag_bounds("gpu-memory-utilization") == FractionBounds(min=0.80, max=0.92, preferred=0.90)
    assert p.flag_bounds("tensor-parallel-size") == IntBounds(min=1, max=2, preferred=1)
    assert p.flag_bounds("kv-cache-dtype") == Choices(allowed=("auto",))  # inherited from default
    assert p.preferred_flags() == {"max-model-len": "16384", "gpu-memory-utilization": "0.9",
                                   "max-num-seqs": "64", "tensor-parallel-size": "1"}
    assert p.gpu_product == "NVIDIA-L40S"
    assert p.gpu.products == ("NVIDIA-L40S",) and p.gpu.per_pod == 1
    assert p.target.namespaces == ("llm",) and p.target.deployments == ("llama-8b",)
    assert p.target.models == ("meta-llama/Llama-3.1-8B-Instruct",)
    assert p.target.matches("llm", "llama-8b", "meta-llama/Llama-3.1-8B-Instruct") is True
    assert p.target.matches("llm", "qwen-7b") is False
    assert p.target.matches("staging", "llama-8b") is False
    (unit,) = p.known_good
    assert unit.image == "vllm/vllm-openai:v0.8.5"
    assert unit.model_revision == "0e9e39f249a16976918f6564b8830bc894c89659"
    assert dict(unit.flags) == {"max-model-len": "16384", "gpu-memory-utilization": "0.9", "max-num-seqs": "64"}
    assert p.peak_concurrency == 8
    assert p.load_shedding.max_num_seqs == 32
    assert p.load_shedding.flags() == {"max-num-seqs": "32", "max-model-len": "8192", "max-num-batched-tokens": "4096"}
    assert p.load_shedding.max_prompt_tokens == 7168
    assert p.confirm.min_concurrency_ratio == 1.25
    assert p.confirm.stable_for == timedelta(minutes=30)  # inherited
    assert p.enforce_eager.max_duration == timedelta(hours=2)  # inherited
    assert p.gitops == "refuse"


def test_llama_8b_accepts_its_known_good_flags_and_rejects_the_runbook_incident() -> None:
    p = load_policy(POLICIES / "llama-8b.yaml")
    good = {"max-model-len": "16384", "gpu-memory-utilization": "0.90", "max-num-seqs": "64"}
    assert p.check_flags(good) == []
    assert p.known_good[0].matches("vllm/vllm-openai:v0.8.5", {**good, "port": "8000"},
                                   "0e9e39f249a16976918f6564b8830bc894c89659") is True
    # Revision 15: max-model-len dropped to the model default of 131072.
    bad = {"gpu-memory-utilization": "0.90", "max-num-seqs": "64"}
    assert [str(v) for v in p.check_flags(bad)] == [
        "--max-model-len is not set: expected an explicit value (never the model's default)"]
    assert p.known_good[0].matches("vllm/vllm-openai:v0.8.5", bad) is False
    assert p.known_good[0].matches("vllm/vllm-openai:v0.9.0", good) is False


def test_load_policies_by_stem() -> None:
    policies = load_policies(POLICIES)
    assert sorted(policies) == ["default", "llama-8b"]
    assert policies["llama-8b"].max_model_len == 16384


def test_load_policies_refuses_same_stem_twice(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("peak_concurrency: 2\n")
    (tmp_path / "a.yml").write_text("peak_concurrency: 3\n")
    with pytest.raises(UserError) as err:
        load_policies(tmp_path)
    assert str(err.value) == f"{tmp_path}/a.yml: policy 'a' is also defined by {tmp_path}/a.yaml"


def test_load_policies_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        load_policies(tmp_path / "nope")
    assert str(err.value) == f"{tmp_path}/nope: no such policy directory"


def test_extends_merges_mappings_and_replaces_lists() -> None:
    p = load_policy(EXTENDS / "child.yaml")
    assert p.flag_bounds("max-model-len") == IntBounds(min=2048, max=16384, preferred=8192)
    assert p.flag_bounds("max-num-seqs") == IntBounds(min=8, max=256)
    assert p.gpu.products == ("NVIDIA-L40S",)
    assert p.gpu.per_pod == 2
    assert (p.peak_concurrency, p.gitops) == (16, "warn")


def test_extends_chain_with_explicit_suffix() -> None:
    p = load_policy(EXTENDS / "grandchild.yaml")
    assert p.name == "grandchild"
    assert p.peak_concurrency == 4
    assert p.flag_bounds("max-model-len") == IntBounds(min=2048, max=16384, preferred=8192)


@pytest.mark.parametrize(("file", "message"), [
    ("cycle-a.yaml", "{d}/cycle-b.yaml: extends: cycle cycle-a.yaml → cycle-b.yaml → cycle-a.yaml"),
    ("self.yaml", "{d}/self.yaml: extends: cycle self.yaml → self.yaml"),
    ("child-of-bad.yaml", '{d}/bad-parent.yaml: gpu.per_pod: expected an integer ≥ 1, got "zero"'),
    ("child-breaks-parent.yaml",
     "{d}/child-breaks-parent.yaml: flags.max-model-len: preferred 8192 is outside max 4096"),
    ("extends-not-string.yaml",
     "{d}/extends-not-string.yaml: extends: expected the name of a policy next to this file (e.g. \"default\"), "
     "got ['base']"),
])
def test_extends_errors_name_the_right_file(file: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        load_policy(EXTENDS / file)
    assert str(err.value) == message.format(d=EXTENDS)


def test_from_mapping_with_file_source_resolves_extends_next_to_it() -> None:
    p = Policy.from_mapping({"extends": "base", "peak_concurrency": 3}, str(EXTENDS / "virtual.yaml"))
    assert (p.name, p.peak_concurrency, p.gitops) == ("virtual", 3, "warn")


def test_from_mapping_without_a_file_cannot_extend() -> None:
    with pytest.raises(UserError) as err:
        Policy.from_mapping({"extends": "default"}, "host data")
    assert str(err.value) == "host data: extends: only policies read from a file can extend another"


def test_policy_is_immutable() -> None:
    p = load_policy(POLICIES / "llama-8b.yaml")
    with pytest.raises(Exception, match="frozen"):
        p.peak_concurrency = 1  # type: ignore[misc]
    with pytest.raises(Exception, match="frozen"):
        p.flags.max_model_len.max = 1  # type: ignore[misc, union-attr]
    with pytest.raises(TypeError):
        p.known_good[0].flags["max-model-len"] = "131072"  # type: ignore[index]
    assert p.model_dump(by_alias=True)["known_good"][0]["flags"]["max-model-len"] == "16384"


def test_a_policy_directory_picks_the_narrowest_target_per_deployment(tmp_path: Path) -> None:
    """One directory for a whole namespace: llama-8b.yaml for llama-8b, default.yaml (no target) for the rest."""
    shipped = load_policies(POLICIES)
    chosen = policy_for(shipped, "policies/", "llm", "llama-8b", "meta-llama/Llama-3.1-8B-Instruct")
    assert chosen.target.deployments == ("llama-8b",)
    assert policy_for(shipped, "policies/", "llm", "qwen-7b", "Qwen/Qwen2.5-7B-Instruct").target.deployments == ()
    (tmp_path / "a.yaml").write_text("target: {deployments: [qwen-7b]}\n")
    (tmp_path / "b.yaml").write_text("target: {deployments: [qwen-7b], namespaces: [other]}\n")
    (tmp_path / "c.yaml").write_text("target: {deployments: [qwen-7b]}\n")
    with pytest.raises(UserError) as tie:
        policy_for(load_policies(tmp_path), "p/", "llm", "qwen-7b", None)
    assert str(tie.value) == "p/: policies a, c cover deployment llm/qwen-7b equally; narrow one's target"
    with pytest.raises(UserError) as none:
        policy_for(load_policies(tmp_path), "p/", "llm", "mistral", "mistralai/Mistral-7B-Instruct-v0.3")
    assert str(none.value) == ("p/: no policy there covers deployment llm/mistral (model "
                               "mistralai/Mistral-7B-Instruct-v0.3); add one, or a default.yaml with no target")


def test_respond_section_defaults_off_and_reads_yaml_off_as_off() -> None:
    assert Policy.from_mapping({}).respond.mode == "off"
    assert Policy.from_mapping({}).respond.cooldown == timedelta(minutes=15)
    assert Policy.from_mapping({"respond": {"mode": False}}).respond.mode == "off"  # YAML 1.1: `mode: off`
    got = Policy.from_mapping({"respond": {"mode": "auto", "cooldown": "2m"}}).respond
    assert (got.mode, got.cooldown) == ("auto", timedelta(minutes=2))
    with pytest.raises(UserError, match=r'respond\.mode: expected one of off, dry-run, auto, got "yes"'):
        Policy.from_mapping({"respond": {"mode": "yes"}})


def test_respond_human_response_is_the_manual_paths_delay() -> None:
    assert Policy.from_mapping({}).respond.human_response == timedelta(minutes=10)
    assert Policy.from_mapping({"respond": {"human_response": "25m"}}).respond.human_response == timedelta(minutes=25)
    with pytest.raises(UserError, match=r"respond\.human_response: expected a duration"):
        Policy.from_mapping({"respond": {"human_response": "soon"}})
