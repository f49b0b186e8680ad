"""A vLLM image newer than the newest modelled release, or naming no vLLM version (``:latest``), through the real
pyinfra CLI on the rehearsal cluster: the pods' own log and every prediction the deploys print say the rules are
extrapolated, or the newest release's for an unknown version, never modelled."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.budget_world import BUDGET, LOCAL, NS, live_pods, rolled_out
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import host_out, quiet, vllm_runtime

rehearsal = pyinfra_run.rehearsal
IMAGE = "vllm/vllm-openai:v0.35.0"


def newer_image(dep: dict, image: str = IMAGE) -> None:
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = image


def test_a_newer_release_is_flagged_in_the_pods_log_and_the_deploys_prediction(rehearsal: Rehearsal) -> None:
    vllm_runtime(rehearsal)
    rehearsal.change(newer_image, change_cause="upgrade vLLM to 0.35.0")
    rolled_out(rehearsal)
    quiet(rehearsal)
    client = rehearsal.client()
    for pod in live_pods(rehearsal):
        assert ("[vllm-remedy rehearsal] vLLM 0.35.0 is newer than the newest modelled release: memory rules "
                "extrapolated from 0.34.0") in client.pod_log(NS, pod["metadata"]["name"], "vllm")
    got = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    assert got.returncode == 0, got.stderr
    predictions = [line for line in host_out(got.stderr) if "prediction on " in line]
    # The dry run's prediction lines, a plan's or a no-op's, name the extrapolated rules.
    assert predictions and all("(vLLM 0.35.0: rules extrapolated from 0.34.0)" in line for line in predictions), \
        predictions


def test_an_image_naming_no_version_says_so_in_the_pods_log_and_the_deploys_prediction(rehearsal: Rehearsal) -> None:
    """`:latest` runs the newest release's rules; a review saw them called modelled (the version is unknown)."""
    vllm_runtime(rehearsal)
    rehearsal.change(lambda dep: newer_image(dep, "vllm/vllm-openai:latest"), change_cause="track :latest")
    rolled_out(rehearsal)
    quiet(rehearsal)
    client = rehearsal.client()
    for pod in live_pods(rehearsal):
        assert ("[vllm-remedy rehearsal] the image names no vLLM version: memory rules of the newest release, "
                "0.34.0") in client.pod_log(NS, pod["metadata"]["name"], "vllm")
    got = rehearsal.pyinfra(LOCAL, BUDGET, "--dry")
    assert got.returncode == 0, got.stderr
    predictions = [line for line in host_out(got.stderr) if "prediction on " in line]
    assert predictions and all("(unknown version: rules of the newest release, 0.34.0)" in line
                               for line in predictions), predictions
