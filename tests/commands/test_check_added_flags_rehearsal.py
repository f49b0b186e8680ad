"""`check` and the rehearsal pod agree on a flag the image's vLLM does not have (not yet, or no longer): `check`
predicts ``argument_refused`` in argparse's words, and the pod started from the same manifest crash-loops on exactly
those words (exit 2). Each reads its own table (``vllm.cmdline.unrecognized.ADDED`` / ``REMOVED``,
``sim.vllm_pod.argv_added.SPAN``); the pod used to start (--hf-overrides on 0.6.3) or stop in the tools' words with
exit 1 (--kv-cache-memory-bytes on 0.8.5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures.sim_world import l40s_pod_cluster
from fixtures.vllm_deployment import LLAMA, manifest

BASE = ["--max-num-seqs", "64", "--max-model-len", "8192"]
CASES = [
    ("vllm/vllm-openai:v0.6.3", ["--hf-overrides", '{"num_hidden_layers": 16}'],
     'unrecognized arguments: --hf-overrides {"num_hidden_layers": 16}'),
    ("vllm/vllm-openai:v0.8.5", ["--kv-cache-memory-bytes", "4G"],
     "unrecognized arguments: --kv-cache-memory-bytes 4G"),
    # a flag that left: --cuda-graph-sizes is in 0.12.0's parser and in no file of 0.13.0's package
    ("vllm/vllm-openai:v0.13.0", ["--cuda-graph-sizes", "64"], "unrecognized arguments: --cuda-graph-sizes 64"),
]

TOP_USAGE = {"v0.6.3": "usage: vllm [-h] {serve,complete,chat} ...",
             "v0.8.5": "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env} ...",
             "v0.13.0": "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."}


def _manifest(tmp_path: Path, image: str, extra: list[str]) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], image=image)).read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container.update(command=["vllm", "serve"], args=[LLAMA, *BASE, *extra])
    return doc


@pytest.mark.parametrize(("image", "extra", "words"), CASES)
def test_check_and_the_rehearsal_pod_refuse_with_the_same_words(tmp_path: Path, image: str, extra: list[str],
                                                                 words: str) -> None:
    doc = _manifest(tmp_path, image, extra)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    item = json.loads(got.stdout)["items"][0]
    reasons = "\n".join(f["reason"] for f in item["findings"])
    assert item["prediction"]["outcome"] == "argument_refused", reasons
    assert words in reasons, reasons

    template = doc["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "old", "namespace": "llm"},
           "spec": template["spec"]}
    with l40s_pod_cluster(1) as cluster:
        cluster.store.create("pods", pod)

        def status() -> dict:
            found = cluster.store.get("pods", "llm", "old")
            return next(iter((found.get("status") or {}).get("containerStatuses") or []), {})

        assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status().get("state")), 8), status()
        log = cluster.read_log("llm", "old")
        # leftovers are the top-level parser's to refuse, under its usage: the release's sub-commands
        # (scripts.py@0.6.3, entrypoints/cli/main.py@0.8.5 and @0.13.0)
        assert log.splitlines()[-2:] == [TOP_USAGE[image.rsplit(":", 1)[1]], f"vllm: error: {words}"], \
            log[-2000:]
        assert "Application startup complete" not in log
        assert (status().get("lastState") or {}).get("terminated", {}).get("exitCode") == 2, status()
