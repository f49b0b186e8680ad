"""`vllm-remedy plan` end to end: flags or a manifest in, a ladder out; bad input is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_remedy.vllm.memory.kv_margin import KV_ESTIMATE_MARGIN, KV_MARGIN_PERCENTILE

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
RUNBOOK = ("plan", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.8.5")
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: llama-8b, namespace: llm}}
spec:
  template:
    spec:
{pin}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.90"]
          resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def write(tmp_path: Path, pin: str) -> str:
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT.format(pin=pin))
    return str(path)


def test_runbook_case_json_matches_the_estimate_command(cli):
    got = cli(*RUNBOOK, "-o", "json")
    assert got.returncode == 1, got.stderr  # a change is proposed
    plan = json.loads(got.stdout)
    assert (plan["apiVersion"], plan["kind"], plan["verdict"]) == ("vllm-remedy.io/v1alpha1", "BudgetPlan", "change")
    assert plan["current"]["outcome"] == "max_len_exceeds_kv" and plan["current"]["max_model_len"] == 131072
    first = plan["steps"][0]
    assert (first["rank"], first["lever"], list(first["set"]), first["temporary"]) == (
        1, "max-model-len", ["max-model-len"], False)
    est = json.loads(cli("estimate", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.8.5",
                         "--max-model-len", first["set"]["max-model-len"], "-o", "json").stdout)
    keys = ("outcome", "kv_cache_tokens", "max_concurrency", "max_model_len", "peak_gib", "kv_cache_gib")
    assert {k: first["prediction"][k] for k in keys} == {k: est[k] for k in keys}
    assert est["outcome"] == "fits" and est["max_concurrency"] >= 8


def test_human_output_has_current_prediction_then_the_table(cli):
    got = cli(*RUNBOOK)
    assert got.returncode == 1, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == "BudgetPlan: meta-llama/Llama-3.1-8B-Instruct on NVIDIA-L4 (21.96 GiB), vLLM 0.8.5"
    assert lines[2].startswith("current:  max_len_exceeds_kv — KV ")
    header = lines.index(next(ln for ln in lines if ln.startswith("rank  change")))
    assert lines[header].split() == ["rank", "change", "KV", "tokens", "max", "conc.", "outcome", "reason"]
    row = lines[header + 1].split()
    data = json.loads(cli(*RUNBOOK, "-o", "json").stdout)["steps"][0]
    assert row[:3] == ["1", "--max-model-len", data["set"]["max-model-len"]]
    assert row[3:6] == [f"{data['prediction']['kv_cache_tokens']:,}", f"{data['prediction']['max_concurrency']:.2f}x",
                        "fits"]
    assert lines[-1] == "verdict: change: 5 candidate change(s) predicted to fit, smallest first"


def test_manifest_reads_image_version_flags_and_gfd_pin(cli, tmp_path):
    path = write(tmp_path, "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}")
    from_manifest = json.loads(cli("plan", "-f", path, "-o", "json").stdout)
    from_flags = json.loads(cli(*RUNBOOK, "--gpu-memory-utilization", "0.90", "-o", "json").stdout)
    assert from_manifest["subject"]["vllmVersion"] == "0.8.5" and from_manifest["subject"]["gpu"] == "NVIDIA-L4"
    assert from_manifest["steps"] == from_flags["steps"]


def test_manifest_affinity_tie_is_planned_on_the_card_the_deploys_predict_on(cli, tmp_path):
    """`plan -f` and the deploys' prediction must name one card; between equal sizes the first listed wins."""
    pin = """      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-L40S, NVIDIA-L40]}"""
    got = cli("plan", "-f", write(tmp_path, pin), "-o", "json")
    assert got.returncode == 1, got.stderr  # max-model-len is implicit: a change
    assert json.loads(got.stdout)["subject"]["gpu"] == "NVIDIA-L40S"


def test_manifest_gke_affinity_pin_and_swap_replaces_the_gke_label(cli, tmp_path):
    pin = """      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: cloud.google.com/gke-accelerator, operator: In, values: [nvidia-l4, nvidia-tesla-a100]}"""
    got = cli("plan", "-f", write(tmp_path, pin), "-o", "json")
    assert got.returncode == 1, got.stderr
    plan = json.loads(got.stdout)
    assert plan["subject"]["gpu"] == "NVIDIA-L4"  # the smaller of the two allowed cards
    assert any("node affinity allows nvidia-l4, nvidia-tesla-a100; planning for the smallest, nvidia-l4" in n
               for n in plan["notes"])


def test_manifest_without_gpu_pin_needs_gpu(cli, tmp_path):
    path = write(tmp_path, "")
    got = cli("plan", "-f", path)
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr == (f"vllm-remedy: error: {path}: no GPU pinning (nodeSelector or node affinity on "
                          "nvidia.com/gpu.product, GKE or Karpenter labels); pass --gpu\n")
    assert cli("plan", "-f", path, "--gpu", "NVIDIA-L4").returncode == 1


def test_log_gives_the_failure_and_free_memory(cli, data_dir):
    got = cli("plan", "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--gpu-memory-utilization", "0.95",
              "--max-model-len", "16384", "--log", str(data_dir / "logs" / "v0.9.1_l40s_free_memory.log"), "-o", "json")
    assert got.returncode == 1, got.stderr
    plan = json.loads(got.stdout)
    assert plan["subject"]["failure"] == "free_memory_below_utilization"
    assert plan["current"]["outcome"] == "free_memory_below_utilization"  # 47.38 - 31.44 GiB held by others
    # The log names no version and 0.34 (the newest rules) no longer refuses this way: the last release that does.
    assert plan["subject"]["rules"] == "modelled" and any("rules of 0.33.0 are used" in n for n in plan["notes"])
    assert plan["steps"] and all(float(s["set"].get("gpu-memory-utilization", 1)) < 0.95 or s["gpu"] != "NVIDIA-L40S"
                                 for s in plan["steps"])


def test_no_fitting_change_exits_one_with_a_verdict(cli, tmp_path):
    policy = tmp_path / "tight.yaml"
    policy.write_text("apiVersion: vllm-remedy.io/v1alpha1\nkind: Policy\n"
                      "flags: {tensor-parallel-size: {min: 1, max: 1}}\ngpu: {products: [NVIDIA-L4]}\n")
    args = ("plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "NVIDIA-L4", "--policy", str(policy))
    got = cli(*args)
    assert got.returncode == 1, got.stderr
    assert got.stdout.splitlines()[-1] == ("verdict: no fitting change: nothing within the bounds is predicted to "
                                           "start and meet the target")
    assert json.loads(cli(*args, "-o", "json").stdout)["verdict"] == "no_fitting_change"


def test_enforce_eager_is_temporary_in_json(cli, tmp_path):
    policy = tmp_path / "eager.yaml"
    policy.write_text("apiVersion: vllm-remedy.io/v1alpha1\nkind: Policy\npeak_concurrency: 1\n"
                      "flags:\n  max-model-len: {min: 4096, max: 8192}\n"
                      "  gpu-memory-utilization: {min: 0.9, max: 0.9}\n"
                      "  tensor-parallel-size: {min: 1, max: 1}\n  max-num-seqs: {min: 16, max: 16}\n"
                      "gpu: {products: [NVIDIA-L4]}\n")
    got = cli("plan", "--model", LLAMA, "--gpu", "NVIDIA-L4", "--vllm-version", "0.9.2", "--max-model-len", "8192",
              "--max-num-seqs", "16", "--other-gib", "1", "--policy", str(policy), "-o", "json")
    assert got.returncode == 1, got.stderr
    (step,) = json.loads(got.stdout)["steps"]
    assert (step["lever"], step["set"], step["temporary"], step["revertAfterSeconds"]) == (
        "enforce-eager", {"enforce-eager": "true"}, True, 7200)
    assert step["reason"].startswith("TEMPORARY, revert within 2h: ")


def test_exit_code_says_whether_anything_must_change(cli, data_dir):
    """0 only for "no change needed" (the runbook's good revision 14), 1 for its bad revision 15: a script or CI
    job can test the verdict without parsing it."""
    runbook = data_dir / "manifests" / "runbook"
    good = cli("plan", "-f", str(runbook / "good-rev14.yaml"), "--policy", "policies/llama-8b.yaml")
    assert (good.returncode, good.stdout.splitlines()[-1]) == (
        0, "verdict: no change needed: the current settings are predicted to fit with headroom")
    bad = cli("plan", "-f", str(runbook / "bad-rev15.yaml"), "--policy", "policies/llama-8b.yaml", "-o", "json")
    assert (bad.returncode, json.loads(bad.stdout)["verdict"]) == (1, "change")


@pytest.mark.parametrize(("args", "message"), [
    (("--model", "acme/NoSuchModel-7B", "--gpu", "NVIDIA-L4"),
     "model acme/NoSuchModel-7B: not in the catalog nor the local Hugging Face cache, and HF_HUB_OFFLINE is set; "
     "pass --model-config with its config.json"),
    (("--model", LLAMA, "--gpu", "NVIDIA-Z9000"), "unknown GPU label NVIDIA-Z9000; pass --gpu-memory-gib"),
    (("--model", LLAMA, "--gpu", "NVIDIA-L4", "--tp", "0"),
     "tensor-parallel-size: 0 must be >= 1"),  # a TP vLLM refuses is config_refused (test_tp_refused_cli)
    # 0.11.0 takes it at config time (from 0.14.0 refused: predicted config_refused, test_estimate_plan_agree)
    (("--model", LLAMA, "--gpu", "NVIDIA-L4", "--max-model-len", "-4096", "--vllm-version", "0.11.0"),
     "max-model-len: -4096 must be a positive integer (or auto)"),
    (("--model", LLAMA, "--gpu", "NVIDIA-L4", "--target-concurrency", "0"), "--target-concurrency: 0 must be > 0"),
    (("--model", LLAMA), "--gpu or --gpu-memory-gib is required"),
])
def test_bad_input_is_one_line_exit_2(cli, args, message):
    got = cli("plan", *args)
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"vllm-remedy: error: {message}\n")


def test_manifest_without_vllm_is_one_line_exit_2(cli, tmp_path):
    path = tmp_path / "nginx.yaml"
    path.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n"
                    "      containers:\n        - {name: web, image: 'nginx:1.27', args: ['-g', 'daemon off;']}\n")
    got = cli("plan", "-f", str(path), "--gpu", "NVIDIA-L4")
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr.startswith(f"vllm-remedy: error: {path}: Deployment/web spec.template.spec: no container runs a "
                                 "vLLM server") and got.stderr.count("\n") == 1


TIGHT_L40S = ("plan", "--model", LLAMA, "--gpu", "NVIDIA-L40S", "--vllm-version", "0.8.5", "--max-model-len", "16384",
              "--gpu-memory-utilization", "0.83", "--max-num-seqs", "64", "--target-concurrency", "8")
PCT = f"{KV_ESTIMATE_MARGIN * 100:.3g} %"
MARGIN = f"{PCT} KV estimate margin (covers the estimator's error in {KV_MARGIN_PERCENTILE} % of held-out startup logs)"


def test_the_margin_is_printed_and_refuses_a_length_that_fits_only_as_predicted(cli):
    # 10.52 requests of 16384 predicted, 10 wanted: 5.2 % spare, a no-op before the margin was applied.
    got = cli(*TIGHT_L40S[:-1], "10")
    assert got.returncode == 1, got.stderr
    lines = got.stdout.splitlines()
    assert lines[1] == ("problem:  the predicted KV cache for 10.00x at max-model-len 16,384 fits by 4 %, below the "
                        f"{PCT} estimate margin")
    assert f"note: {MARGIN}" in lines
    data = json.loads(cli(*TIGHT_L40S[:-1], "10", "-o", "json").stdout)
    assert data["subject"]["kvMargin"] == {"fraction": KV_ESTIMATE_MARGIN, "percentile": KV_MARGIN_PERCENTILE,
                                           "source": "held-out error"}
    assert MARGIN in data["notes"]
    first = data["steps"][0]
    assert first["reason"].startswith(f"largest max-model-len within bounds that fits: "
                                      f"{int(first['set']['max-model-len']):,} (16,384 fits by 4 %, below the {PCT} "
                                      "estimate margin)")


def test_policy_margin_overrides_the_derived_one_and_a_bad_one_is_exit_2(cli, tmp_path):
    policy = tmp_path / "margin.yaml"
    policy.write_text("budget:\n  kv_margin: 0.3\n")
    data = json.loads(cli(*TIGHT_L40S, "--policy", str(policy), "-o", "json").stdout)
    assert data["subject"]["kvMargin"] == {"fraction": 0.3, "percentile": KV_MARGIN_PERCENTILE, "source": "policy"}
    assert data["problem"].startswith("the predicted KV cache for 8.00x at max-model-len 16,384 fits by 23 %, "
                                      "below the 30 % estimate margin")
    assert (f"30 % KV estimate margin (policy budget.kv_margin; the derived {PCT} covers the estimator's error in "
            f"{KV_MARGIN_PERCENTILE} % of held-out startup logs)") in data["notes"]
    first = data["steps"][0]
    assert first["prediction"]["max_concurrency"] * 0.7 >= 8 and int(first["set"]["max-model-len"]) < 16384
    policy.write_text("budget:\n  kv_margin: 0.7\n")
    got = cli(*TIGHT_L40S, "--policy", str(policy))
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr == (f"vllm-remedy: error: {policy}: budget.kv_margin: expected a fraction of the predicted KV "
                          "cache in [0, 0.5], got 0.7\n")
