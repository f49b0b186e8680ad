"""Rollout history and undo: pure functions checked against literal expectations AND against real kubectl.

The kubectl tests run kubectl 1.32 against the fake API server holding the same fixtures and compare
what it prints/sends with what kube/ computes — the undo patch must equal kubectl's byte for byte.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest

from fixtures.kube_fakeapi import FakeApi, kubeconfig_text
from fixtures.kube_objects import BAD_ARGS, GOOD_ARGS, OLD_ARGS, deployment, incident, pod_template, replicaset
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.errors import RolloutError
from vllm_remedy.kube.history import Revision, history_table, revision_template, rollout_history, templates_equal
from vllm_remedy.kube.rollout import (
    RULE_DIFFERENT,
    RULE_MARK,
    RULE_POLICY,
    NoRollbackTarget,
    choose_rollback,
    plan_undo,
    policy_pin,
    undo_target,
)
from vllm_remedy.policy import Policy

KUBECTL = Path(os.environ.get("VLLM_REMEDY_KUBECTL", "/usr/lib/google-cloud-sdk/bin/kubectl.1.32"))
needs_kubectl = pytest.mark.skipif(not KUBECTL.is_file(), reason=f"no kubectl at {KUBECTL}")
NOW = 1_741_000_000.0  # 2025-03-03T11:06:40Z


def test_history_keeps_only_controlled_replicasets_in_revision_order() -> None:
    dep, rss = incident()
    hist = rollout_history(dep, rss)
    assert [(r.number, r.replicaset, r.change_cause, r.current) for r in hist] == [
        (13, "llama-8b-6d8f7b9c5d", "kubectl apply -f llama-8b.yaml", False),
        (14, "llama-8b-7c9d8f6b4f", "max-model-len 16384", False),
        (15, "llama-8b-5f6c7d8b9a", "", True),
    ]
    assert history_table(hist) == ("REVISION  CHANGE-CAUSE\n13        kubectl apply -f llama-8b.yaml\n"
                                    "14        max-model-len 16384\n15        <none>\n")
    assert history_table([]) == "No rollout history found."


def test_revision_detail_carries_change_cause() -> None:
    dep, rss = incident()
    tpl = revision_template(rollout_history(dep, rss), 14)
    assert tpl["metadata"]["annotations"] == {"kubernetes.io/change-cause": "max-model-len 16384"}
    assert tpl["spec"]["containers"][0]["args"] == GOOD_ARGS
    with pytest.raises(RolloutError, match="unable to find the specified revision 9"):
        revision_template(rollout_history(dep, rss), 9)


def test_template_equality_ignores_hash_empties_and_quantity_spelling() -> None:
    a = pod_template(GOOD_ARGS, "NVIDIA-L40S", hash_label="abc")
    b = pod_template(GOOD_ARGS, "NVIDIA-L40S")
    b["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1
    b["spec"]["tolerations"] = []
    a["metadata"]["annotations"] = {}
    assert templates_equal(a, b)
    b["spec"]["containers"][0]["args"] = BAD_ARGS
    assert not templates_equal(a, b)


def test_undo_targets_previous_or_named_revision() -> None:
    dep, rss = incident()
    assert undo_target(dep, rss)["metadata"]["name"] == "llama-8b-7c9d8f6b4f"
    assert undo_target(dep, rss, 13)["metadata"]["name"] == "llama-8b-6d8f7b9c5d"
    with pytest.raises(RolloutError) as err:
        undo_target(dep, rss, 99)  # exists, but owned by another Deployment
    assert str(err.value) == "unable to find specified revision 99 in history"
    with pytest.raises(RolloutError) as err:
        undo_target(dep, rss[:1])
    assert str(err.value) == 'no rollout history found for deployment "llama-8b"'


def test_undo_plan_kubectl_patch_and_guarded_patch() -> None:
    from vllm_remedy.kube.annotations import template_digest

    dep, rss = incident()
    rss[3]["metadata"]["annotations"].update({"vllm-remedy.io/known-good": "2025-03-02T12:00:00Z",
                                              "vllm-remedy.io/known-good-reason": "stable 30m"})
    plan = plan_undo(dep, rss, 14, at=NOW, reason="revision 15 crash-loops (CUDA OOM)")
    template = pod_template(GOOD_ARGS, "NVIDIA-L40S")
    assert plan.kubectl_patch == [
        {"op": "replace", "path": "/spec/template", "value": template},
        {"op": "replace", "path": "/metadata/annotations", "value": {
            "deployment.kubernetes.io/revision": "15",
            "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"apps/v1","kind":"Deployment"}\n',
            "kubernetes.io/change-cause": "max-model-len 16384",
            "vllm-remedy.io/known-good": "2025-03-02T12:00:00Z",
            "vllm-remedy.io/known-good-reason": "stable 30m"}}]
    assert plan.patch == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "4242"},
        {"op": "replace", "path": "/spec/template", "value": template},
        {"op": "replace", "path": "/metadata/annotations", "value": {
            "deployment.kubernetes.io/revision": "15",
            "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"apps/v1","kind":"Deployment"}\n',
            "kubernetes.io/change-cause": "vllm-remedy restore: revision 15 crash-loops (CUDA OOM)",
            "vllm-remedy.io/last-action": "restore",
            "vllm-remedy.io/last-action-at": "2025-03-03T11:06:40Z",
            "vllm-remedy.io/last-action-reason": "revision 15 crash-loops (CUDA OOM)",
            # the template this write leaves: whether a later crash is on a revision we put there
            "vllm-remedy.io/last-action-template": template_digest(template)}}]
    assert (plan.revision, plan.replicaset, plan.skipped, plan.message) == (14, "llama-8b-7c9d8f6b4f", False,
                                                                           "rolled back")


def test_undo_skips_when_template_matches_and_refuses_paused() -> None:
    dep, rss = incident()
    dep["spec"]["template"] = pod_template(GOOD_ARGS, "NVIDIA-L40S")
    plan = plan_undo(dep, rss, 14)
    assert (plan.skipped, plan.patch, plan.message) == (
        True, [], "skipped rollback (current template already matches revision 14)")
    paused = deployment(pod_template(BAD_ARGS, "NVIDIA-L4"), 15, paused=True)
    with pytest.raises(RolloutError) as err:
        plan_undo(paused, rss, 14)
    assert str(err.value) == ("you cannot rollback a paused deployment; resume it first with "
                              "'kubectl rollout resume' and try again")


def test_choose_rollback_rules_in_order() -> None:
    dep, rss = incident()
    hist = rollout_history(dep, rss)
    choice = choose_rollback(hist, 15)
    assert (choice.revision.number, choice.rule) == (14, RULE_DIFFERENT)
    assert choice.detail == ("revision 14 (llama-8b-7c9d8f6b4f) no known-good mark or policy pin to prefer; nothing "
                             "recorded or predicted against it")
    # a policy unit pins what revision 13 runs
    policy = Policy.from_mapping({"known_good": [{"image": "vllm/vllm-openai:v0.8.5",
                                                  "flags": {"max-model-len": 8192}}]})
    choice = choose_rollback(hist, 15, pinned=policy_pin(policy.known_good))
    assert (choice.revision.number, choice.rule) == (13, RULE_POLICY)
    # a mark on 13 beats the pin; a mark under another prefix does not count
    rss[2]["metadata"]["annotations"]["ops.example.com/known-good"] = "2025-03-01T10:00:00Z"
    marked = choose_rollback(rollout_history(dep, rss), 15, keys=Keys("ops.example.com/"))
    assert (marked.revision.number, marked.rule) == (13, RULE_MARK)
    assert marked.detail == "revision 13 (llama-8b-6d8f7b9c5d) marked known-good at 2025-03-01T10:00:00Z"
    assert choose_rollback(rollout_history(dep, rss), 15).rule == RULE_DIFFERENT
    with pytest.raises(RolloutError, match=r"no earlier revision to roll back to \(current revision 13\)"):
        choose_rollback(hist, 13)


def test_evidence_skips_a_revision_whatever_its_rank_and_says_why() -> None:
    """A marked revision with evidence against it is passed over; the rest are judged newest first."""
    dep, rss = incident()
    rss[2]["metadata"]["annotations"]["vllm-remedy.io/known-good"] = "2025-03-01T10:00:00Z"
    hist = rollout_history(dep, rss)
    assert choose_rollback(hist, 15, keys=Keys()).revision.number == 13  # the mark ranks first...
    bad = {13: "seen crash-looping (oom_under_load)"}
    choice = choose_rollback(hist, 15, reject=lambda rev: bad.get(rev.number))
    assert (choice.revision.number, choice.rule) == (14, RULE_DIFFERENT)  # ...but not against evidence
    assert choice.skipped == ("revision 13 (llama-8b-6d8f7b9c5d): seen crash-looping (oom_under_load)",)
    with pytest.raises(NoRollbackTarget) as err:
        choose_rollback(hist, 15, reject=lambda rev: "predicted max_len_exceeds_kv on NVIDIA-L4")
    assert str(err.value) == "no earlier revision is predicted to serve (2 skipped)"
    assert err.value.skipped[0] == "revision 13 (llama-8b-6d8f7b9c5d): predicted max_len_exceeds_kv on NVIDIA-L4"


# ---- against real kubectl ----------------------------------------------------------------------

@pytest.fixture
def kube(tmp_path: Path):
    api = FakeApi()
    base = api.start()
    cfg = tmp_path / "config"
    cfg.write_text(kubeconfig_text(base))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(KUBECTL), "--kubeconfig", str(cfg), "--cache-dir", str(tmp_path / "cache"),
                               "-n", "llm", *args], capture_output=True, text=True, timeout=60)

    api.kubectl = run
    yield api
    api.stop()


def _load(api: FakeApi, dep: dict, rss: list[dict]) -> None:
    api.add("deployments", copy.deepcopy(dep))
    for rs in rss:
        api.add("replicasets", copy.deepcopy(rs))


@needs_kubectl
def test_undo_patch_equals_kubectls_byte_for_byte(kube: FakeApi) -> None:
    dep, rss = incident()
    _load(kube, dep, rss)
    got = kube.kubectl("rollout", "undo", "deploy/llama-8b", "--to-revision=14")
    assert (got.returncode, got.stdout) == (0, "deployment.apps/llama-8b rolled back\n")
    sent = [s for s in kube.seen if s.method == "PATCH"]
    assert len(sent) == 1 and sent[0].headers["content-type"] == "application/json-patch+json"
    ours = plan_undo(dep, rss, 14).kubectl_patch
    assert json.loads(sent[0].body) == ours
    assert sent[0].body.decode() == json.dumps(ours, separators=(",", ":"))


@needs_kubectl
def test_history_and_refusals_match_kubectl(kube: FakeApi) -> None:
    dep, rss = incident()
    _load(kube, dep, rss)
    got = kube.kubectl("rollout", "history", "deploy/llama-8b")
    assert got.stdout == "deployment.apps/llama-8b \n" + history_table(rollout_history(dep, rss)) + "\n"
    got = kube.kubectl("rollout", "undo", "deploy/llama-8b", "--to-revision=99")
    with pytest.raises(RolloutError) as err:
        plan_undo(dep, rss, 99)
    assert got.stderr == f"error: {err.value}\n"
    # plain undo when the current template already is the previous revision's: kubectl says "revision 0"
    same = copy.deepcopy(dep)
    same["spec"]["template"] = pod_template(GOOD_ARGS, "NVIDIA-L40S")
    kube.objects.clear()
    _load(kube, same, [rss[0], rss[3]])
    got = kube.kubectl("rollout", "undo", "deploy/llama-8b")
    assert got.stdout == f"deployment.apps/llama-8b {plan_undo(same, [rss[0], rss[3]]).message}\n"
    assert [s.method for s in kube.seen].count("PATCH") == 0


@needs_kubectl
def test_paused_and_no_history_match_kubectl(kube: FakeApi) -> None:
    _, rss = incident()
    paused = deployment(pod_template(BAD_ARGS, "NVIDIA-L4"), 15, paused=True)
    _load(kube, paused, rss)
    got = kube.kubectl("rollout", "undo", "deploy/llama-8b", "--to-revision=14")
    with pytest.raises(RolloutError) as err:
        plan_undo(paused, rss, 14)
    assert got.stderr == f"error: {err.value}\n"
    kube.objects.clear()
    lonely = [replicaset(OLD_ARGS, "NVIDIA-L40S", 1, "6d8f7b9c5d", "2025-03-01T09:00:00Z", replicas=1)]
    _load(kube, deployment(pod_template(OLD_ARGS, "NVIDIA-L40S"), 1), lonely)
    got = kube.kubectl("rollout", "undo", "deploy/llama-8b")
    with pytest.raises(RolloutError) as err:
        plan_undo(deployment(pod_template(OLD_ARGS, "NVIDIA-L40S"), 1), lonely)
    assert got.stderr == f"error: {err.value}\n"


def test_a_revision_running_a_temporary_toggle_is_no_policy_pin_unless_the_unit_names_the_flag() -> None:
    """Revision 14 is 13 with the eager toggle on (what deploys/enforce_eager.py writes). Its flags hold the unit,
    but the toggle's record - its expiry - stays on the Deployment and a rollback never copies it back: pinning 14
    would make a temporary measure permanent and invisible to expire. The pin goes to 13, the unit itself; a
    team that runs eager mode for good says so in the unit and gets 14."""
    def rev(number: int, args: list[str]) -> Revision:
        return Revision(number, f"rs-{number}", "", pod_template(args, "NVIDIA-L40S"), {}, "", 0, number == 15)

    hist = [rev(13, GOOD_ARGS), rev(14, [*GOOD_ARGS, "--enforce-eager"]), rev(15, BAD_ARGS)]
    unit = {"image": "vllm/vllm-openai:v0.8.5", "flags": {"max-model-len": 16384}}
    choice = choose_rollback(hist, 15, pinned=policy_pin(Policy.from_mapping({"known_good": [unit]}).known_good))
    assert (choice.revision.number, choice.rule) == (13, RULE_POLICY)
    eager_unit = {**unit, "flags": {"max-model-len": 16384, "enforce-eager": "true"}}
    choice = choose_rollback(hist, 15, pinned=policy_pin(Policy.from_mapping({"known_good": [eager_unit]}).known_good))
    assert (choice.revision.number, choice.rule) == (14, RULE_POLICY)
