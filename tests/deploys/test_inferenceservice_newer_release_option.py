"""deploys/diagnose.py on an InferenceService whose predictor moved to vllm/vllm-openai:v0.35.0 with an option no
vLLM release read had (real pyinfra CLI, rehearsal cluster): the crash line says "not judged" of it after the
extrapolated rules, in check's words, as the Deployment's startup-log line does (``remedies.diagnose.pod_unjudged``);
it used to name the rules only."""

from __future__ import annotations

from pathlib import Path

from fixtures import kserve_world as kw
from fixtures import pyinfra_run
from fixtures.pyinfra_run import ROOT, Rehearsal, host_lines

rehearsal = pyinfra_run.rehearsal
HOST = "@k8s/rehearsal/llm/inferenceservice/llama"
DIAGNOSE = str(ROOT / "deploys" / "diagnose.py")
SAID = ("(vLLM 0.35.0: rules extrapolated from 0.34.0) (not judged: --foo-bar is not an option of vLLM 0.34.0, the "
        "newest release read; 0.35.0 may accept it (a rehearsal pod starts with it, its effect not modelled))")


def test_the_crash_line_says_the_option_was_not_judged(rehearsal: Rehearsal, tmp_path: Path) -> None:
    cluster, client = rehearsal.cluster, rehearsal.client()
    kw.install(cluster)
    rehearsal.change(lambda d: d["spec"].__setitem__("replicas", 0))  # its L40S cards go to the predictor
    client.request("POST", client.object_path("llm", "inferenceservices", group="serving.kserve.io/v1beta1"),
                   body=kw.isvc())
    assert cluster.wait_for(lambda: kw.ready(cluster), 60), kw.status(cluster)
    path = client.object_path("llm", "inferenceservices", "llama", "serving.kserve.io/v1beta1")
    client.request("PATCH", path, body={"spec": {"predictor": {"model": {"args": [*kw.BAD, "--foo-bar", "1"],
                                                                         "image": "vllm/vllm-openai:v0.35.0"}}}},
                   content_type="application/merge-patch+json")
    assert cluster.wait_for(lambda: kw.crash_looping(cluster), 60)
    inventory = tmp_path / "inventory.py"
    inventory.write_text(f'hosts = ["{HOST}"]\n')
    seen = rehearsal.pyinfra(str(inventory), DIAGNOSE, "--dry")
    assert seen.returncode == 0, seen.stderr
    lines = host_lines(seen.stderr, HOST)
    crash = [line for line in lines if line.startswith("pods llama-predictor-")]
    assert len(crash) == 1 and " crash-loop — max_len_exceeds_kv: " in crash[0], lines
    assert crash[0].endswith(SAID), crash[0]
