"""A Hub that misbehaves, on the rehearsal cluster through the real pyinfra CLI (tests/fixtures/hf_hub_server via
HF_ENDPOINT): the cluster's vLLM pods die as vLLM does when it cannot get the config (``model_unavailable`` for
diagnose), the deploys say "no prediction: <why>" in one line, and restore never waits on the Hub."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, args_of, rolled_out, with_args
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.hub_deploys import inventory_for, pods_refuse
from fixtures.restore_world import (
    DIAGNOSE,
    RESTORE,
    crash_looping,
    host_out,
    vllm_runtime,
    wait_until,
)

rehearsal = pyinfra_run.exact_rehearsal
MODEL = "acme-corp/SmolLM2-Mirror"
SERVE = [MODEL, "--max-model-len", "8192", "--gpu-memory-utilization", "0.90", "--max-num-seqs", "64"]
LIMIT = 1  # VLLM_REMEDY_HUB_TIMEOUT here: a stall costs each resolution this, not the default 20 s


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    """The Hub for the in-process cluster and (through the environment) the pyinfra CLI."""
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(monkeypatch, server, tmp_path / "hf", timeout=LIMIT)
        yield server


def test_a_redirect_loop_kills_the_pod_as_vllm_would_and_the_budget_says_no_prediction(hub, rehearsal) -> None:
    """Before: the cluster's kubelet died on httpx2.TooManyRedirects ("controller failed") and the pod stayed
    ContainerCreating for ever; the deploys printed a traceback."""
    hub.repos[MODEL].misbehave = "redirect-loop"
    vllm_runtime(rehearsal)
    rehearsal.change(with_args(SERVE), change_cause="serve a model through a broken mirror")
    wait_until(lambda: pods_refuse(rehearsal, MODEL), 20, "the pods to die on the model")
    inv = inventory_for(rehearsal, MODEL)
    diagnosed = rehearsal.pyinfra(inv, DIAGNOSE, "-y")
    assert diagnosed.returncode == 0, diagnosed.stderr
    report = host_out(diagnosed.stderr)
    assert any(line.startswith("llama-8b-") and line.endswith("): model_unavailable — max-model-len 8192")
               for line in report), report
    got = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert got.returncode == 1, got.stderr
    lines = host_out(got.stderr)
    assert (f"no prediction: deployment llm/llama-8b: model {MODEL}: the Hub ({hub.url}) sent too many redirects "
            "(Exceeded 20 redirects while resolving ") in "\n".join(lines), lines
    assert "Traceback" not in got.stderr, got.stderr


def test_restore_does_not_wait_on_a_stalled_hub(hub, rehearsal) -> None:
    """The pods have the model (the world ships its config); the tools' Hub accepts connections and never answers.
    Restore still rolls back by the crash evidence, within the limit, saying why there is no prediction. Before:
    huggingface_hub's retries held it for minutes."""
    rehearsal.cluster.apply_seed({"models": [{"id": MODEL, "config": SMOLLM2_CONFIG}]})  # only the pods have it
    vllm_runtime(rehearsal)
    rehearsal.change(with_args(SERVE), change_cause="serve the mirrored model")
    rolled_out(rehearsal)
    hub.repos[MODEL].misbehave = "stall"
    starved = [MODEL, "--max-model-len", "8192", "--gpu-memory-utilization", "0.05"]
    rehearsal.change(with_args(starved), change_cause="starve it")
    wait_until(lambda: crash_looping(rehearsal, 1), 60, "revision 16 to crash-loop")
    start = time.monotonic()
    got = rehearsal.pyinfra(inventory_for(rehearsal, MODEL, "known_good: []\n"), RESTORE, "-y", timeout=60)
    seconds = time.monotonic() - start
    assert got.returncode == 0, got.stderr
    lines = host_out(got.stderr)
    assert (f"no prediction: model {MODEL}: the Hub ({hub.url}) did not answer within {LIMIT} s "
            "(VLLM_REMEDY_HUB_TIMEOUT) and the local Hugging Face cache has no config.json") in lines, lines
    assert any(line.startswith("roll back deployment llm/llama-8b from revision 16 to revision 15 ")
               and ": written (resourceVersion " in line for line in lines), lines
    assert args_of(rolled_out(rehearsal)) == SERVE
    assert seconds < 20, seconds  # the rollback's own wait included
