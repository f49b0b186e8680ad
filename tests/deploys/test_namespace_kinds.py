"""A namespace inventory (``@k8s/<cluster>/<namespace>``) expands to every vLLM workload of every kind: `vllm-remedy
drift` and every deploy, through the real pyinfra CLI, must judge or refuse a StatefulSet and a LeaderWorkerSet in
their own words - never fail on a read that only a Deployment answers ("reads a deployment, and this host is a
statefulset"). One seeded world for the module: nothing here writes (drift plans, the deploys run ``--dry``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from fixtures import lws_world, sts_world
from fixtures.drift_world import as_json
from fixtures.drift_world import inventory as drift_inventory
from fixtures.pyinfra_run import ROOT, Rehearsal, host_lines, start_rehearsal

DEP = "@k8s/rehearsal/llm/llama-8b"
STS = sts_world.STS_HOST
LWS = lws_world.HOST
KIND_ERROR = "this host is a"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Rehearsal, str]]:
    """llm holds llama-8b (Deployment, scaled to zero), llama-sts (StatefulSet, 2 Ready) and qwen-lws (an LWS whose
    group waits for GPUs): the namespace inventory names all three, under the shipped policies."""
    tmp = tmp_path_factory.mktemp("kinds")
    rehearsal = start_rehearsal(tmp)
    try:
        sts_world.llama_set(rehearsal)
        lws_world.install_crd(rehearsal.clusters["rehearsal"])
        client = rehearsal.client()
        client.request("POST", client.object_path("llm", "leaderworkersets", group="leaderworkerset.x-k8s.io/v1"),
                       body=lws_world.vllm_lws(lws_world.NAME))
        shipped = str(ROOT / "policies")
        yield rehearsal, drift_inventory(tmp, rehearsal.kubeconfig, shipped, hosts=["@k8s/rehearsal/llm"])
    finally:
        rehearsal.stop()


def remedy(rehearsal: Rehearsal, *args: str) -> subprocess.CompletedProcess[str]:
    """``vllm-remedy ARGS`` with the rehearsal's KUBECONFIG (the namespace host expands at inventory load)."""
    return subprocess.run([sys.executable, "-m", "vllm_remedy", *args], capture_output=True, text=True,
                          env=rehearsal.env(), cwd=rehearsal.tmp, timeout=180)


def test_drift_checks_every_kind_of_a_namespace(world: tuple[Rehearsal, str]) -> None:
    rehearsal, inv = world
    got = remedy(rehearsal, "drift", "-i", inv, "-o", "json")
    assert KIND_ERROR not in got.stdout + got.stderr
    doc = as_json(got)
    assert (got.returncode, doc["status"]["errors"]) == (1, 0), got.stdout
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert {h: v["status"] for h, v in hosts.items()} == {DEP: "InSync", STS: "InSync", LWS: "Drifted"}
    assert hosts[LWS]["drifted"] == ["concurrency"]  # the 32B distill at 32k over two L40S: 1.44x, below peak 8
    for name in (STS, LWS):
        checks = {c["check"]: c["status"] for c in hosts[name]["checks"]}
        assert checks["max-model-len"] == "pass" and checks["crash-loop"] == "pass", hosts[name]["checks"]
    assert hosts[STS]["observed"]["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert hosts[LWS]["observed"]["model"] == "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"
    crash = next(c for c in hosts[STS]["checks"] if c["check"] == "crash-loop")
    assert crash["detail"] == "2 pod(s) of revision 1, none crash-looping"
    assert hosts[STS]["fix"] == {"operations": [], "changes": 0, "refused": None, "note": None}  # in sync: nothing
    [fix] = hosts[LWS]["fix"]["operations"]  # deploys/budget.py's lws_budget.FIX, planned: only its last step changes
    assert (fix["operation"], fix["changes"], hosts[LWS]["fix"]["note"]) == (
        "Smallest change that restores headroom, leader and workers", True, None), hosts[LWS]["fix"]
    assert any(line.startswith("budget leaderworkerset llm/qwen-lws, leader and workers: --max-model-len ")
               for line in fix["lines"]), fix["lines"]


def test_expire_checks_the_toggles_of_every_kind_that_records_them(world: tuple[Rehearsal, str]) -> None:
    rehearsal, inv = world
    got = remedy(rehearsal, "expire", "-i", inv, "-o", "json")
    assert KIND_ERROR not in got.stdout + got.stderr
    doc = as_json(got)
    assert (got.returncode, doc["status"]["errors"]) == (0, 0), got.stdout
    hosts = {h["host"]: h for h in doc["hosts"]}
    for name in (STS, LWS):  # deploys/enforce_eager.py records toggles on both kinds: checked, none due
        assert (hosts[name]["status"], hosts[name]["lines"], hosts[name]["remaining"]) == ("Unchanged", [], []), \
            hosts[name]


@pytest.mark.parametrize("deploy", sorted(p.name for p in (ROOT / "deploys").glob("*.py")))
def test_every_deploy_plans_or_refuses_each_kind_in_its_own_words(world: tuple[Rehearsal, str], deploy: str) -> None:
    rehearsal, inv = world
    got = rehearsal.pyinfra(inv, str(ROOT / "deploys" / deploy), "--dry", timeout=300)
    assert KIND_ERROR not in got.stdout + got.stderr, got.stderr
    refused = False
    for name, kind in ((STS, "statefulset"), (LWS, "leaderworkerset")):  # planned, a noop or refused by name
        said = [line for line in host_lines(got.stderr, name) if line.startswith(("refused: ", "noop: "))]
        assert said and all(line.startswith(("noop: ", f"refused: {kind} llm/")) for line in said), got.stderr
        refused = refused or any(line.startswith("refused: ") for line in said)
    refused = refused or any(line.startswith("refused: ") for line in host_lines(got.stderr, DEP))
    # a refusal (kinds.unsupported among them) fails its host in --dry as -y would: exit 1 exactly then
    assert got.returncode == (1 if refused else 0), got.stderr


