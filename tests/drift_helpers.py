"""Shared helpers for the drift / expire / GitOps end-to-end tests on the rehearsal cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pyinfra_fixtures import ROOT, Rehearsal
from vllm_remedy.sim.server import SimServer

HOST = "@k8s/rehearsal/llm/llama-8b"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
#: The seed's revision 14 — policies/llama-8b.yaml's known-good unit, model revision pinned.
MODEL_REVISION = "0e9e39f249a16976918f6564b8830bc894c89659"
GOOD_ARGS = [MODEL, "--revision", MODEL_REVISION, "--max-model-len", "16384", "--gpu-memory-utilization", "0.90",
             "--max-num-seqs", "64"]
BUDGET = str(ROOT / "deploys" / "budget.py")

#: The llama-8b policy with a known-good unit the seeded revision 3 matches (no model revision pinned).
UNIT = """
known_good:
  - name: llama-8b-v085
    image: vllm/vllm-openai:v0.8.5
    model: meta-llama/Llama-3.1-8B-Instruct
    flags: {max-model-len: 16384, gpu-memory-utilization: 0.90, max-num-seqs: 64}
"""


def policy(tmp: Path, extra: str = UNIT, name: str = "test-policy") -> str:
    """A policy file extending policies/llama-8b.yaml with ``extra`` YAML."""
    path = tmp / f"{name}.yaml"
    path.write_text(f"extends: {ROOT / 'policies' / 'llama-8b'}\n{extra}")
    return str(path)


def inventory(tmp: Path, kubeconfig: Path | str, policy_path: str, hosts: list[str] | None = None,
              name: str = "inv", **data: Any) -> str:
    """An inventory file naming the kubeconfig in host data (no environment needed, as in a CronJob)."""
    path = tmp / f"{name}.py"
    group = {"kubeconfig": str(kubeconfig), "policy": policy_path, **data}
    path.write_text(f"vllm = ({hosts or [HOST]!r}, {group!r})\n")
    return str(path)


def as_json(got: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert got.stdout.strip(), got.stderr
    return json.loads(got.stdout)


def set_args(rehearsal: Rehearsal, args: list[str], labels: dict[str, str] | None = None,
             notes: dict[str, str] | None = None) -> dict[str, Any]:
    """A new revision with ``args`` (and extra metadata labels/annotations), written as an admin would."""
    def mutate(dep: dict[str, Any]) -> None:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = list(args)
        dep["metadata"].setdefault("labels", {}).update(labels or {})
        dep["metadata"].setdefault("annotations", {}).update(notes or {})
    return rehearsal.change(mutate)


class CountingServer(SimServer):
    """The rehearsal cluster's server, recording (method, path) of every request it answers (server-side count)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[str, str]] = []

    def dispatch(self, req: Any) -> Any:
        self.seen.append((req.method, req.path))
        return super().dispatch(req)


def add_vllm_deployment(rehearsal: Rehearsal, name: str, args: list[str] | None = None) -> None:
    """A second vLLM Deployment in llm: llama-8b's spec under ``name`` (own labels), scaled to zero."""
    client = rehearsal.client()
    body = client.get_deployment("llm", "llama-8b")
    labels = {"app": name}
    body["metadata"] = {"name": name, "namespace": "llm", "labels": labels}
    body["spec"].update(replicas=0, selector={"matchLabels": labels})
    body["spec"]["template"]["metadata"]["labels"] = labels
    if args is not None:
        body["spec"]["template"]["spec"]["containers"][0]["args"] = list(args)
    client.request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=body)
