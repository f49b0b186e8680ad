"""A first Hub resolution is one request per file, a later run one HEAD: nothing else reaches HF_ENDPOINT.

huggingface_hub 2.x asks ``GET {HF_ENDPOINT}/api/agent-harnesses`` for the User-Agent it builds (agent detection),
keeping the answer on disk only when the Hub has one: against a mirror without that route (a 404, as here) it was
asked again in every run. The tool turns that detection off (``hub.ask.quiet_user_agent``). Real CLI against the
Hub-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import os
from pathlib import Path

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, Repo, hub_server

MODEL = "acme-corp/Smol-Requests"


def test_estimate_asks_only_for_the_models_files(tmp_path: Path) -> None:
    saved = dict(os.environ)
    with hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as hub:
        for name in ("HF_TOKEN", "HF_HUB_CACHE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
            os.environ.pop(name, None)
        os.environ.update({"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url})
        try:
            runs = []
            for _ in range(2):
                got = run_cli("estimate", "--model", MODEL, "--gpu", "NVIDIA-L40S", "--max-model-len", "4096")
                assert got.returncode == 0, got.stdout + got.stderr
                runs.append(list(hub.requests))
                hub.requests.clear()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    resolve = f"/{MODEL}/resolve/main"
    assert runs == [[("GET", f"{resolve}/config.json"), ("GET", f"{resolve}/hf_quant_config.json")],
                    [("HEAD", f"{resolve}/config.json")]], runs
