"""deploys/budget.py and deploys/restore.py on vllm/vllm-openai:v0.35.0 with an option no vLLM release read had
(``--foo-bar 1``: hostile review 14, F15), through the real pyinfra CLI on the rehearsal cluster: the pods start with
it (the rehearsal takes an option a newer release may have added, and says so in their log); the budget's fix
(``--max-model-len`` made explicit) is written beside it, the option kept as written, never dropped or respelled; and
a rollback to the known-good revision that has it restores it as it was."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, GOOD_ARGS, LOCAL, MODEL, NS, args_of, deployment, live_pods, scenario
from fixtures.dry_run import dry_then_apply
from fixtures.kube_writes import mark_known_good
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import RESTORE, host_out, incident, replicaset
from vllm_remedy.kube.history import templates_equal

rehearsal = pyinfra_run.rehearsal
IMPLICIT = [MODEL, "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64", "--foo-bar", "1"]


def _newer(dep: dict, args: list[str] = IMPLICIT) -> None:
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "vllm/vllm-openai:v0.35.0"
    container["args"] = list(args)


def test_the_budget_fix_keeps_the_option_it_did_not_judge(rehearsal: Rehearsal) -> None:
    scenario(rehearsal, _newer, "upgrade to 0.35.0 with an option it may have added; drop --max-model-len")
    client = rehearsal.client()
    for pod in live_pods(rehearsal):
        assert "--foo-bar is not an option of vLLM 0.34.0, the newest release read: taken as 0.35.0's" in \
            client.pod_log(NS, pod["metadata"]["name"], "vllm")
    dry, got = dry_then_apply(rehearsal, LOCAL, BUDGET, expect_diffs=1)
    assert got.returncode == 0, got.stderr
    lines = host_out(dry.stderr)
    assert "-    - --foo-bar" not in lines and "- --foo-bar" in lines, lines  # context of the diff, not removed
    assert any(line.startswith("budget deployment llm/llama-8b: --max-model-len ") for line in host_out(got.stderr))
    after = args_of(deployment(rehearsal))
    assert after[:len(IMPLICIT)] == IMPLICIT and after[len(IMPLICIT)] == "--max-model-len", after


def test_a_rollback_restores_the_option_with_its_revision(rehearsal: Rehearsal) -> None:
    scenario(rehearsal, lambda dep: _newer(dep, [*GOOD_ARGS, "--foo-bar", "1"]), "0.35.0 with --foo-bar")
    client = rehearsal.client()
    good = replicaset(rehearsal, 15)
    mark_known_good(client, NS, good["metadata"]["name"], at=client.server_time(), reason="served in a test")
    incident(rehearsal)  # revision 16 crash-loops
    got = rehearsal.pyinfra(LOCAL, RESTORE, "-y")
    assert got.returncode == 0, got.stderr
    assert any(line.startswith("roll back deployment llm/llama-8b from revision 16 to revision 15 ")
               for line in host_out(got.stderr)), got.stderr
    after = deployment(rehearsal)
    assert templates_equal(after["spec"]["template"], good["spec"]["template"])
    assert args_of(after) == [*GOOD_ARGS, "--foo-bar", "1"]
