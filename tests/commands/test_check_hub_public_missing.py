"""`vllm-remedy check` on a misspelled model id against a Hub that answers as the public Hub does: an unknown
repository asked without a token is 401 ``RepoNotFound`` "Invalid username or password." (tests/fixtures/hf_hub_server,
``public=True``), which huggingface_hub raises as RepositoryNotFoundError. That is a wrong --model (or a private
repository), not a refused token: the line says "correct --model" first and names the token only for a private
repository; "refused the token" stays for the Hub's "Invalid credentials in Authorization header".

Real CLI, the Hub on 127.0.0.1 through HF_ENDPOINT (never the real Hub).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server

LLAMA = "acme-corp/Llama-Hub"
SERVE = ["--max-model-len", "8192", "--gpu-memory-utilization", "0.9", "--max-num-seqs", "64"]


def deployment(args: list[str]) -> dict[str, Any]:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "command": ["vllm", "serve"], "args": args,
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "llm"},
            "spec": {"selector": {"matchLabels": {"app": "m"}}, "template": {
                "metadata": {"labels": {"app": "m"}},
                "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}, "containers": [container]}}}}


def check(hub: HubServer, tmp_path: Path, args: list[str]) -> tuple[int, str]:
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(deployment(args)))
    saved = dict(os.environ)
    os.environ.pop("HF_TOKEN", None)
    os.environ.update({"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url})
    try:
        got = run_cli("check", "-f", str(manifest))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return got.returncode, got.stdout + got.stderr


def test_a_misspelled_id_on_the_public_hub_is_a_wrong_model_not_a_refused_token(tmp_path: Path) -> None:
    """Before: "the Hub refused the token (401: invalid credentials); set HF_TOKEN to a valid token" for a typo."""
    with hub_server({LLAMA: Repo({"config.json": SMOLLM2_CONFIG})}, public=True) as hub:
        code, out = check(hub, tmp_path, ["acme-corp/Llamma-Hub", *SERVE])
        assert ("GET", "/acme-corp/Llamma-Hub/resolve/main/config.json") in hub.requests
    assert code == 1, out
    assert (f"predicted model_unavailable — model acme-corp/Llamma-Hub: not found on the Hub ({hub.url}) (401: "
            "Invalid username or password) nor in the local Hugging Face cache; correct --model, or if the "
            "repository is private, set HF_TOKEN to a token with access to it") in out, out
    assert "refused the token" not in out, out
