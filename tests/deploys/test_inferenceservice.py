"""deploys/restore.py and deploys/diagnose.py on a KServe InferenceService, through the real pyinfra CLI on the
rehearsal cluster: a bad --max-model-len is diagnosed from the crashed pods' log and rolled back through the
InferenceService's own spec to KServe's last ready predictor revision — never through the Deployment KServe owns."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import kserve_world as kw
from fixtures import pyinfra_run
from fixtures.budget_world import prompted_run
from fixtures.pyinfra_run import ROOT, Rehearsal, host_lines
from vllm_remedy.connectors.namespaces import list_vllm_workloads

rehearsal = pyinfra_run.rehearsal
HOST = "@k8s/rehearsal/llm/inferenceservice/llama"
RESTORE = str(ROOT / "deploys" / "restore.py")
DIAGNOSE = str(ROOT / "deploys" / "diagnose.py")
BUDGET = str(ROOT / "deploys" / "budget.py")


def inventory(tmp: Path, host: str = HOST) -> str:
    path = tmp / "inventory.py"
    path.write_text(f'hosts = ["{host}"]\n')
    return str(path)


def isvc(rehearsal: Rehearsal) -> dict:
    client = rehearsal.client()
    return client.request("GET", client.object_path("llm", "inferenceservices", "llama", "serving.kserve.io/v1beta1"))


def test_a_bad_max_model_len_is_diagnosed_and_rolled_back_through_the_inferenceservice(
        rehearsal: Rehearsal, tmp_path: Path) -> None:
    kw.bad_rollout(rehearsal)
    inv = inventory(tmp_path)
    seen = rehearsal.pyinfra(inv, DIAGNOSE, "-y")
    assert seen.returncode == 0, seen.stderr
    lines = host_lines(seen.stderr, HOST)
    assert ("inferenceservice llm/llama: latest predictor revision llama-predictor-00002, last ready "
            "llama-predictor-00001") in lines
    assert any(line.startswith("pods llama-predictor-") and " crash-loop — max_len_exceeds_kv: " in line
               for line in lines), lines
    assert "changed since llama-predictor-00001: --max-model-len: 16384 → 131072" in lines

    forced = rehearsal.pyinfra(inv, RESTORE, "--dry", "--data", "revision=1")  # never silently ignored
    assert forced.returncode == 2 and "Traceback" not in forced.stderr, forced.stderr
    assert [line for line in host_lines(forced.stderr, HOST)
            if line and line != "Connected" and not line.startswith("note: ")] == [
        "host data revision: not supported for an InferenceService (inferenceservice llm/llama): restore rolls back "
        "to KServe's last ready predictor revision only; run without --data revision, or edit spec.predictor by "
        "hand"], forced.stderr

    dry = rehearsal.pyinfra(inv, RESTORE, "--dry")
    assert dry.returncode == 0, dry.stderr
    lines = host_lines(dry.stderr, HOST)
    assert ("roll back inferenceservice llm/llama from predictor revision llama-predictor-00002 to "
            "llama-predictor-00001 (KServe's last ready revision)") in lines
    assert "-  - '131072'" in lines and "+  - '16384'" in lines, lines
    [prediction] = [line for line in lines if line.startswith("prediction on ")]  # diff + prediction, as every kind
    assert prediction.startswith("prediction on NVIDIA-L40S: fits — KV cache ") and prediction.endswith(
        " at max-model-len 16384"), prediction  # the planned predictor's template, not the crashing one's
    assert lines.index(prediction) > lines.index("+  - '16384'")
    assert isvc(rehearsal)["spec"]["predictor"]["model"]["args"] == kw.BAD

    got = rehearsal.pyinfra(inv, RESTORE, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert any(line.startswith("wait for inferenceservice llm/llama to be Ready: Ready on predictor revision "
                               "llama-predictor-00003 after ") for line in lines), lines
    after = isvc(rehearsal)
    assert after["spec"]["predictor"]["model"]["args"] == kw.GOOD  # what the dry run's diff showed
    predictor = after["status"]["components"]["predictor"]
    assert (predictor["latestReadyRevision"], predictor["previousRolledoutRevision"]) == (
        "llama-predictor-00003", "llama-predictor-00001")
    owned = rehearsal.client().get_deployment("llm", "llama-predictor")
    assert owned["spec"]["template"]["spec"]["containers"][0]["args"] == kw.GOOD
    assert "vllm-remedy.io/last-action" in after["metadata"]["annotations"]

    again = rehearsal.pyinfra(inv, RESTORE, "-y")
    assert again.returncode == 0, again.stderr
    assert ("noop: nothing to restore: no pod of inferenceservice llm/llama's latest predictor revision "
            "llama-predictor-00003 is crash-looping") in host_lines(again.stderr, HOST)
    assert isvc(rehearsal)["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]


def test_a_concurrent_edit_of_the_inferenceservice_is_refused(rehearsal: Rehearsal, tmp_path: Path) -> None:
    kw.bad_rollout(rehearsal)
    # the namespace form names the InferenceService (its model.args read through the runtime), not KServe's child
    assert list_vllm_workloads(rehearsal.client(), "llm") == [("deployment", "llama-8b"), ("inferenceservice", "llama")]
    client = rehearsal.client()
    path = client.object_path("llm", "inferenceservices", "llama", "serving.kserve.io/v1beta1")

    def someone_else() -> None:  # between the approved plan and the write
        client.request("PATCH", path, body={"metadata": {"annotations": {"team": "edited meanwhile"}}},
                       content_type="application/merge-patch+json")

    got = prompted_run(rehearsal, RESTORE, someone_else, inventory=inventory(tmp_path))
    assert got.returncode == 1, got.stderr
    failed = [line for line in host_lines(got.stderr, HOST) if "changed since it was read" in line]
    assert len(failed) == 1 and failed[0].startswith("roll back inferenceservice llm/llama from predictor revision "
                                                     "llama-predictor-00002 to llama-predictor-00001"), failed
    after = isvc(rehearsal)
    assert after["spec"]["predictor"]["model"]["args"] == kw.BAD  # theirs stands, ours was not written over it
    assert after["metadata"]["annotations"]["team"] == "edited meanwhile"


def test_the_deployment_kserve_owns_is_refused_as_a_host_naming_its_owner(rehearsal: Rehearsal,
                                                                          tmp_path: Path) -> None:
    kw.bad_rollout(rehearsal)
    child = "@k8s/rehearsal/llm/llama-predictor"
    before = rehearsal.client().get_deployment("llm", "llama-predictor")
    got = rehearsal.pyinfra(inventory(tmp_path, child), RESTORE, "-y")
    assert got.returncode == 1, got.stderr
    lines = host_lines(got.stderr, child)
    assert {line for line in lines if line.startswith("refused: ")} == {
        "refused: deployment llm/llama-predictor is owned by InferenceService llm/llama (ownerReference "
        "InferenceService/llama); the InferenceService controller reverts a direct change at once: nothing written — "
        "patch the InferenceService, not its child"}, lines
    assert ("owner: change the InferenceService llm/llama (the vLLM args of its template: --set max-model-len=16384); "
            "its controller rolls the change out to this object") in lines
    after = rehearsal.client().get_deployment("llm", "llama-predictor")
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert isvc(rehearsal)["spec"]["predictor"]["model"]["args"] == kw.BAD


def test_no_crd_and_no_vllm_container_fail_in_one_line_each_and_change_nothing(rehearsal: Rehearsal,
                                                                               tmp_path: Path) -> None:
    missing = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y")
    assert missing.returncode != 0
    assert host_lines(missing.stderr, HOST) == [
        "inferenceservice llm/llama: kind InferenceService (inferenceservices.serving.kserve.io) is not served by "
        "context rehearsal: its API group or CRD is not installed"]

    kw.install(rehearsal.cluster)
    nginx = kw.isvc()
    nginx["spec"]["predictor"] = {"containers": [{"name": "kserve-container", "image": "nginx:1.27"}]}
    client = rehearsal.client()
    client.request("POST", client.object_path("llm", "inferenceservices", group="serving.kserve.io/v1beta1"),
                   body=nginx)
    before = isvc(rehearsal)
    got = rehearsal.pyinfra(inventory(tmp_path), RESTORE, "-y")
    assert got.returncode != 0
    assert host_lines(got.stderr, HOST) == [
        "inferenceservice llm/llama: no container runs a vLLM server (containers: kserve-container; looked for vllm "
        "serve / python -m vllm.entrypoints... in command/args)"]
    after = isvc(rehearsal)
    assert (after["spec"], after["metadata"].get("annotations")) == (before["spec"], before["metadata"].get(
        "annotations"))
    assert "Traceback" not in got.stderr + missing.stderr


def test_budget_writes_the_planners_flag_change_into_the_predictor(rehearsal: Rehearsal, tmp_path: Path) -> None:
    kw.bad_rollout(rehearsal)
    inv = inventory(tmp_path)
    dry = rehearsal.pyinfra(inv, BUDGET, "--dry")
    assert dry.returncode == 0, dry.stderr
    shown = host_lines(dry.stderr, HOST)
    [summary] = [line for line in shown if line.startswith("budget inferenceservice llm/llama: ")]
    got = rehearsal.pyinfra(inv, BUDGET, "-y", timeout=300)
    assert got.returncode == 0, got.stderr
    lines = host_lines(got.stderr, HOST)
    assert summary in lines and any(line.startswith("wait for inferenceservice llm/llama to be Ready: Ready on "
                                                    "predictor revision llama-predictor-00003") for line in lines)
    after = isvc(rehearsal)
    [planned] = [line.removeprefix("+  - ").strip("'") for line in shown if line.startswith("+  - ")]
    assert f"--max-model-len {planned}" in summary and int(planned) < 131072
    args = after["spec"]["predictor"]["model"]["args"]
    assert args == [kw.MODEL, "--max-model-len", planned, "--gpu-memory-utilization", "0.5"]  # what the dry run showed
    owned = rehearsal.client().get_deployment("llm", "llama-predictor")
    assert owned["spec"]["template"]["spec"]["containers"][0]["args"] == args  # KServe rolled out our spec


def test_drift_reads_the_inferenceservice_and_plans_the_fix_budget_would_make(rehearsal: Rehearsal, tmp_path: Path,
                                                                             cli) -> None:
    kw.bad_rollout(rehearsal)
    inv = tmp_path / "drift.py"
    inv.write_text(f'hosts = [("{HOST}", {{"kubeconfig": "{rehearsal.kubeconfig}"}})]\n')
    got = cli("drift", "-i", str(inv), "-o", "json")
    [found] = json.loads(got.stdout)["hosts"]
    assert found["host"] == HOST and found["error"] is None, found
    checks = {c["check"]: c for c in found["checks"]}
    assert checks["crash-loop"]["status"] == "drift", checks["crash-loop"]
    assert found["observed"]["flags"]["max-model-len"] == "131072"
    [fix] = found["fix"]["operations"]
    assert fix["refused"] is None and fix["changes"], fix
    assert any(line.startswith("budget inferenceservice llm/llama: --max-model-len ") for line in fix["lines"]), fix
    assert isvc(rehearsal)["spec"]["predictor"]["model"]["args"] == kw.BAD  # drift never writes
