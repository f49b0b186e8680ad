"""`check` and `plan` apply the same rules to a 0.34 manifest on the same policy.

0.34 sizes the KV cache after warmup and keeps max(1 GiB, 0.75 x transient) free itself, and an unset
--gpu-memory-utilization means 1.0 there. The policy's utilization bounds apply to that effective value (both
commands report it), while the planner's own free-memory headroom does not apply on top of vLLM's margin (a
modelling error changes the cache's size there, which the KV estimate margin covers).
"""

from __future__ import annotations

import json
from pathlib import Path

from vllm_remedy.remedies.budget.limits import limits
from vllm_remedy.vllm import catalog

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "data" / "manifests" / "runbook" / "good-rev14.yaml"
POLICY = str(ROOT / "policies" / "default.yaml")


def manifest(tmp_path: Path, utilization: str | None) -> str:
    text = GOOD.read_text().replace("vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.34.0")
    text = text.replace('"--gpu-memory-utilization", "0.90", ',
                        "" if utilization is None else f'"--gpu-memory-utilization", "{utilization}", ')
    path = tmp_path / f"deploy-{utilization}.yaml"
    path.write_text(text)
    return str(path)


def test_an_unset_utilization_at_034_fails_both_for_the_same_reason(cli, tmp_path):
    path = manifest(tmp_path, None)
    checked = cli("check", "-f", path, "--policy", POLICY, "-o", "json")
    planned = cli("plan", "-f", path, "--policy", POLICY, "-o", "json")
    assert (checked.returncode, planned.returncode) == (1, 1), (checked.stdout, planned.stdout)
    (item,) = json.loads(checked.stdout)["items"]
    (finding,) = item["findings"]
    assert finding["check"] == "flag-bounds"
    assert "--gpu-memory-utilization is not set: vLLM 0.34.0 runs it at its default 1" in finding["reason"]
    assert "[0.5, 0.95]" in finding["reason"] and "--gpu-memory-utilization 0.95" in finding["fix"]
    plan = json.loads(planned.stdout)
    assert plan["problem"] == "gpu-memory-utilization 1 is outside [0.5, 0.95]"  # no free-memory margin problem
    assert plan["steps"][0]["set"] == {"gpu-memory-utilization": "0.95"}


def test_the_planners_fix_passes_both(cli, tmp_path):
    path = manifest(tmp_path, "0.95")
    checked = cli("check", "-f", path, "--policy", POLICY)
    planned = cli("plan", "-f", path, "--policy", POLICY)
    assert (checked.returncode, planned.returncode) == (0, 0), (checked.stdout, planned.stdout)
    assert "verdict: no change needed" in planned.stdout


def test_a_policy_that_allows_the_default_passes_both(cli, tmp_path):
    """With utilization 1 allowed, the plan used to refuse it for leaving vLLM's own 1 GiB margin free."""
    policy = tmp_path / "allow-1.yaml"
    policy.write_text(f"extends: {POLICY}\nflags:\n  gpu-memory-utilization: {{min: 0.5, max: 1.0}}\n")
    path = manifest(tmp_path, None)
    checked = cli("check", "-f", path, "--policy", str(policy))
    planned = cli("plan", "-f", path, "--policy", str(policy))
    assert (checked.returncode, planned.returncode) == (0, 0), (checked.stdout, planned.stdout)
    assert "leaves" not in planned.stdout and "verdict: no change needed" in planned.stdout


def test_the_headroom_margin_still_holds_before_034():
    card = catalog.gpu("NVIDIA-L40S")
    lim = limits(None, card, None, None)
    assert lim.headroom_for(card, "0.33.0") == max(0.5, 0.03 * card.total_gib)
    assert lim.headroom_for(card, "0.34.0") == 0.0
