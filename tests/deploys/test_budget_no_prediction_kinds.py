"""deploys/budget.py on a KServe InferenceService and a LeaderWorkerSet whose model resolves nowhere (offline, an
empty Hugging Face cache), through the real pyinfra CLI on the rehearsal cluster: one "no prediction: <why>" line, as
for a Deployment (tests/deploys/test_uncatalogued_model.py), not a "refused: ..." that reads like a policy refusal."""

from __future__ import annotations

from pathlib import Path

from fixtures import kserve_world as kw
from fixtures import lws_remedy, lws_world, pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal, host_lines

rehearsal = pyinfra_run.rehearsal
BUDGET = str(ROOT / "deploys" / "budget.py")
NOWHERE = "acme-corp/Nowhere-7B"
WHY = f"model {NOWHERE}: not in the catalog nor the local Hugging Face cache, and HF_HUB_OFFLINE is set"


def test_an_inferenceservice_budget_without_a_model_is_no_prediction(rehearsal: Rehearsal, tmp_path: Path) -> None:
    kw.install(rehearsal.cluster)
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "inferenceservices", group="serving.kserve.io/v1beta1"),
                   body=kw.isvc(args=[NOWHERE, *kw.GOOD[1:]]))
    host = "@k8s/rehearsal/llm/inferenceservice/llama"
    inventory = tmp_path / "inventory.py"
    inventory.write_text(f'hosts = ["{host}"]\n')
    got = rehearsal.pyinfra(str(inventory), BUDGET, "--dry")
    assert got.returncode == 1, got.stderr  # nothing can be chosen: the host fails, as -y would
    lines = host_lines(got.stderr, host)
    assert f"no prediction: inferenceservice llm/llama: {WHY}" in lines, lines
    assert not any(line.startswith("refused: ") for line in lines), lines


def test_a_leaderworkerset_budget_without_a_model_is_no_prediction(rehearsal: Rehearsal, tmp_path: Path) -> None:
    lws_world.install_crd(rehearsal.clusters["rehearsal"])
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                   body=lws_world.vllm_lws(lws_world.NAME, args=[NOWHERE, *lws_world.GOOD_ARGS[1:]]))
    got = rehearsal.pyinfra(lws_remedy.inventory(tmp_path), BUDGET, "--dry")
    assert got.returncode == 1, got.stderr
    lines = lws_remedy.lines(got)
    assert f"no prediction: leaderworkerset llm/{lws_world.NAME}: {WHY}" in lines, lines
    assert not any(line.startswith("refused: ") for line in lines), lines
