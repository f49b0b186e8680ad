"""The pure half of `vllm-remedy check`: which containers are vLLM workloads, and each one's findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_remedy.drift.manifest_check import ERROR, UNKNOWN_SEVERITY, check_workload
from vllm_remedy.drift.manifest_workloads import workloads
from vllm_remedy.policy import DEFAULT_POLICY, load_policy
from vllm_remedy.vllm import manifest
from vllm_remedy.vllm.cmdline import find_server

DATA = Path(__file__).resolve().parents[1] / "data" / "manifests"
ROOT = Path(__file__).resolve().parents[2]
LLAMA_8B = load_policy(ROOT / "policies" / "llama-8b.yaml")
NOW = 1_750_000_000.0


def docs(path: Path) -> list:
    return manifest.load_documents(path.read_text(), str(path))


def one(text: str, policy=DEFAULT_POLICY):
    (w,) = workloads(manifest.load_documents(text, "t.yaml"), "t.yaml")
    return check_workload(w, policy, NOW)


def test_every_vllm_container_is_a_workload_and_sidecars_are_not():
    found = workloads(docs(DATA / "forms" / "18-several-containers.yaml"), "f.yaml")
    assert [(w.object, w.container) for w in found] == [("Deployment/default/sidecars", "model-m7b")]


def test_objects_without_a_namespace_get_the_one_given():
    found = workloads(docs(DATA / "forms" / "18-several-containers.yaml"), "f.yaml", namespace="llm")
    assert [w.object for w in found] == ["Deployment/llm/sidecars"]
    found = workloads(docs(DATA / "runbook" / "good-rev14.yaml"), "g.yaml", namespace="other")
    assert [w.object for w in found] == ["Deployment/llm/llama-8b"]  # its own namespace wins


def test_a_list_gives_its_items_with_their_own_names():
    text = (DATA / "runbook" / "good-rev14.yaml").read_text()
    good = manifest.load_documents(text, "g")[0]
    other = {**good, "metadata": {"name": "llama-8b-canary", "namespace": "staging"}}
    found = workloads([{"apiVersion": "v1", "kind": "List", "items": [good, other]}], "list.yaml")
    assert [w.object for w in found] == ["Deployment/llm/llama-8b", "Deployment/staging/llama-8b-canary"]


def test_flags_outside_argv_are_an_unknown_finding_not_a_pass():
    (w,) = workloads(docs(DATA / "forms" / "17-no-argv.yaml"), "f.yaml")
    result = check_workload(w, DEFAULT_POLICY, NOW)
    assert not result.ok and [(f.check, f.severity) for f in result.findings] == [("command", UNKNOWN_SEVERITY)]
    assert "vLLM settings are not in argv" in result.findings[0].reason


def test_the_good_revision_passes_its_policy():
    (w,) = workloads(docs(DATA / "runbook" / "good-rev14.yaml"), "good.yaml")
    result = check_workload(w, LLAMA_8B, NOW)
    assert result.ok, result.findings
    assert result.prediction is not None and result.prediction.gpu == "NVIDIA-L40S"
    assert result.prediction.estimate is not None and result.prediction.estimate.max_model_len == 16384


def test_the_bad_revision_fails_with_the_planners_fix():
    (w,) = workloads(docs(DATA / "runbook" / "bad-rev15.yaml"), "bad.yaml")
    result = check_workload(w, LLAMA_8B, NOW)
    by_check = {f.check: f for f in result.findings}
    assert {"start", "max-model-len", "gpu-pinned", "known-good-unit"} <= set(by_check)
    assert all(f.severity == ERROR for f in result.findings)
    assert "max_len_exceeds_kv on NVIDIA-L4" in by_check["start"].reason
    assert result.fix is not None and "max-model-len" in result.fix.set
    assert result.fix.prediction.fits  # the planner never proposes a step predicted to fail
    assert by_check["start"].fix.startswith(result.fix.describe())
    assert by_check["gpu-pinned"].fix == by_check["start"].fix  # the pin is part of the planner's step


def test_the_bad_revisions_fix_is_the_good_revision():
    """Pin first, then budget (the runbook's order): the smallest fix of revision 15 under llama-8b.yaml gives
    back revision 14's flags and GPU pin — on the policy's L40S, not a TP=2 stretch on the L4."""
    (bad,) = workloads(docs(DATA / "runbook" / "bad-rev15.yaml"), "bad.yaml")
    (good,) = workloads(docs(DATA / "runbook" / "good-rev14.yaml"), "good.yaml")
    fix = check_workload(bad, LLAMA_8B, NOW).fix
    assert fix is not None and bad.server is not None and good.server is not None
    fixed = find_server({"containers": [bad.server.edit(set=fix.set, unset=fix.unset)]})
    assert fixed.flags == good.server.flags
    selector = {k: v for k, v in bad.spec["nodeSelector"].items() if k not in fix.template.drop_node_selector}
    assert selector | dict(fix.template.node_selector) == good.spec["nodeSelector"]
    assert fix.gpu == "NVIDIA-L40S" and fix.prediction.fits


UNPINNED = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: m, namespace: llm}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          args: ["--model", "{model}", "--max-model-len", "8192"]
          env: [{name: MODEL_ID, value: meta-llama/Llama-3.1-8B-Instruct}]
          resources: {limits: {nvidia.com/gpu: "1"}}
"""


def test_no_gpu_named_is_an_unknown_finding():
    result = one(UNPINNED.replace("{model}", "meta-llama/Llama-3.1-8B-Instruct"))
    assert [(f.check, f.severity) for f in result.findings] == [("gpu", UNKNOWN_SEVERITY)]
    assert result.findings[0].reason.startswith("cannot predict: no GPU named")


def test_an_unpinned_template_is_predicted_on_the_policys_gpu():
    result = one(UNPINNED.replace("{model}", "meta-llama/Llama-3.1-8B-Instruct"), LLAMA_8B)
    assert result.prediction is not None and result.prediction.gpu == "NVIDIA-L40S"
    assert "gpu-pinned" in {f.check for f in result.findings}  # the policy wants the pin written down
    assert any("predicted on the policy's NVIDIA-L40S" in n for n in result.notes)


def test_a_model_outside_the_catalog_is_never_passed():
    text = UNPINNED.replace("{model}", "acme/NoSuchModel-7B").replace(
        "      containers:", "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L40S}\n      containers:")
    result = one(text)
    assert [(f.check, f.severity) for f in result.findings] == [("model", UNKNOWN_SEVERITY)]
    # never looked up (no hub.learn here): said so, not "not in the catalog" as if the catalog were the only source
    assert result.findings[0].reason == ("cannot predict: model acme/NoSuchModel-7B: not resolved (not a catalog "
                                         "repository; its config.json comes from the Hugging Face cache, the Hub or "
                                         "the policy's model_config)")


def test_model_from_the_containers_env_as_kubernetes_expands_it():
    text = UNPINNED.replace("{model}", "$(MODEL_ID)").replace(
        "      containers:", "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L40S}\n      containers:")
    result = one(text)
    assert result.ok, result.findings


@pytest.mark.parametrize("flag", ["--enforce-eager"])
def test_permanent_eager_mode_is_a_policy_finding(flag):
    text = UNPINNED.replace("{model}", "meta-llama/Llama-3.1-8B-Instruct").replace(
        '"8192"]', f'"8192", "{flag}"]').replace(
        "      containers:", "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L40S}\n      containers:")
    result = one(text)
    (finding,) = result.findings
    assert finding.check == "enforce-eager" and finding.fix.startswith("remove --enforce-eager")
