"""A rehearsal pod whose repository exists but holds no config.json (here params.json alone, a Mistral-format export)
ends as its vLLM release does, and ``diagnose`` does not call the right id wrong.

End to end: the rehearsal cluster served over HTTP and driven with the official ``kubernetes`` client, the pods asking
tests/fixtures/hf_hub_server through HF_ENDPOINT (never the real Hub), the log read back with the real CLI's
``diagnose``. From 0.11.0 transformers reads config.json first, but its ``get_config_dict`` returns ``({}, {})`` for a
Hub repository without one (measured with transformers 4.57.1 and 5.0.0), so every release from 0.8.5 ends in vLLM's
own "Could not detect config format" inside "Invalid repository ID" (transformers_utils/config.py@0.11.0 l.551-580,
@0.34.0 l.935-967; the GGUF item of that message from 0.9.0 to 0.11.0); from 0.9.1 pydantic's ValidationError of
ModelConfig carries the outer message alone. Older releases end in their format detection's words
(``sim.vllm_pod.hub_refusal.no_config``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import hf_hub_server
from fixtures.hf_hub_server import HubServer, Repo, hub_server
from fixtures.served_pods import run, served

MODEL = "acme-corp/Params-Only"
PARAMS = {"dim": 4096, "n_layers": 32, "head_dim": 128, "hidden_dim": 14336, "n_heads": 32, "n_kv_heads": 8,
          "norm_eps": 1e-05, "vocab_size": 32768}
DETECT = "ValueError: Could not detect config format for no config file found."
CAUSE = "The above exception was the direct cause of the following exception:"
PYDANTIC = "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"
GGUF = "3. For GGUF: pass the local path of the GGUF checkpoint."


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"params.json": PARAMS})}) as server:
        hf_hub_server.use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


#: (release, lines its log holds, lines it must not, diagnose's reason)
EXPECTED = [
    ("0.34.0", [PYDANTIC, f"  Value error, Invalid repository ID or local directory specified: '{MODEL}'."],
     [GGUF, DETECT, CAUSE], "no_config"),
    ("0.11.0", [PYDANTIC, GGUF], [DETECT, CAUSE], "no_config"),
    ("0.10.2", [PYDANTIC, f"  Value error, Invalid repository ID or local directory specified: '{MODEL}'."],
     [DETECT, CAUSE], "no_config"),
    ("0.9.0", [f"{DETECT} Ensure your model has either config.json (HF format) or params.json (Mistral format).",
               CAUSE, f"ValueError: Invalid repository ID or local directory specified: '{MODEL}'.", GGUF], [PYDANTIC],
     "no_config"),
    ("0.8.5", [f"{DETECT} Ensure your model has either config.json (HF format) or params.json (Mistral format)."],
     [GGUF], "no_config"),
    ("0.8.0", ["ValueError: Unsupported config format: ConfigFormat.AUTO"], [], "not_found"),
    ("0.7.3", [f"ValueError: No supported config format found in {MODEL}."], [], "not_found"),
    ("0.6.6", [f"ValueError: No supported config format found in {MODEL}"], [], "not_found"),
]


@pytest.mark.parametrize("version, lines, absent, reason", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_a_repository_without_config_json_ends_as_its_release_does(api, hub, cli, tmp_path: Path, version: str,
                                                                    lines: list[str], absent: list[str],
                                                                    reason: str) -> None:
    """Before: every release ended in vLLM's bare "Invalid repository ID" (transformers' "is not a local folder"
    before 0.8), which ``diagnose`` read as not_found: "correct --model" for a repository that exists."""
    log, code = run(api, f"params-{version.replace('.', '-')}", f"vllm/vllm-openai:v{version}", None,
                    ["--model", MODEL, "--max-model-len", "4096"])
    assert code == 1, log[-2000:]
    for line in lines:
        assert line in log, (line, log[-3000:])
    for line in absent:
        assert line not in log, (line, log[-3000:])
    saved = tmp_path / "pod.log"
    saved.write_text(log)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["reason"]) == ("model_unavailable", reason), data
    if reason == "no_config":
        assert "correct --model" not in got.stdout, data
