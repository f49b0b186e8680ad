"""A rehearsal pod running vLLM with ``--hf-token`` and no value, and no token of its own (no HF_TOKEN, no token file):
huggingface_hub's LocalTokenNotFoundError ends the start, in the release's own traceback (``sim.vllm_pod.hub_token``),
and ``diagnose`` reads the log back to that reason. End to end: the served cluster, the kubernetes client, the pods
asking tests/fixtures/hf_hub_server through HF_ENDPOINT, the real CLI's ``diagnose``. Before, every one of them
started (a bare flag was taken for the environment's token, here none, on a public repository)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import run, served

MODEL = "acme-corp/SmolLM2-Bare-Flag"
SAID = ("huggingface_hub.errors.LocalTokenNotFoundError: Token is required (`token=True`), but no token found. You "
        "need to provide a token or be logged in to Hugging Face with `hf auth login` or `huggingface_hub.login`.")
ARGS = ["--model", MODEL, "--hf-token", "--max-model-len", "4096"]


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


#: release -> the vLLM frame the error is raised under: transformers' first config.json read from 0.19.0, ModelConfig's
#: image processor config read before (after config.json was read with the environment's token)
RAISED_UNDER = {"0.34.0": "in maybe_override_with_speculators", "0.19.0": "in maybe_override_with_speculators",
                "0.18.0": "in get_hf_image_processor_config", "0.8.5": "in get_hf_image_processor_config"}


@pytest.mark.parametrize("release", list(RAISED_UNDER))
def test_a_bare_flag_without_a_token_ends_in_huggingface_hubs_refusal(api, hub, cli, tmp_path: Path,
                                                                       release: str) -> None:
    log, code = run(api, f"bare-{release.replace('.', '-')}", f"vllm/vllm-openai:v{release}", None, ARGS)
    assert code == 1, log[-2000:]
    assert SAID in log and RAISED_UNDER[release] in log, log[-3000:]
    assert log.rstrip().endswith("See https://huggingface.co/settings/tokens."), log[-1000:]
    saved = tmp_path / "pod.log"
    saved.write_text(log)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["reason"]) == ("model_unavailable", "no_token"), data


def test_a_token_in_the_env_or_a_token_file_lets_it_start_an_empty_dir_does_not(api, hub) -> None:
    log, code = run(api, "bare-env", "vllm/vllm-openai:v0.34.0", None, ARGS, env={"HF_TOKEN": "hf_pod"})
    assert code is None and "GPU KV cache size" in log, log[-2000:]
    secret = [{"name": "hf", "secret": {"secretName": "hf-token"}}]
    log, code = run(api, "bare-file", "vllm/vllm-openai:v0.34.0", None, ARGS, volumes=secret,
                    mounts=[{"name": "hf", "mountPath": "/root/.cache/huggingface/token", "subPath": "token"}])
    assert code is None and "GPU KV cache size" in log, log[-2000:]
    empty = [{"name": "hf", "emptyDir": {}}]
    log, code = run(api, "bare-empty", "vllm/vllm-openai:v0.34.0", None, ARGS, volumes=empty,
                    mounts=[{"name": "hf", "mountPath": "/root/.cache/huggingface"}])
    assert code == 1 and SAID in log, log[-2000:]


def test_before_0_8_5_the_flag_is_an_unknown_option(api, hub) -> None:
    """0.8.3 has no --hf-token (engine/arg_utils.py@0.8.3): argparse refuses it before any token is looked for."""
    log, code = run(api, "bare-0-8-3", "vllm/vllm-openai:v0.8.3", None, ARGS)
    assert code == 2 and "unrecognized arguments: --hf-token" in log and "LocalTokenNotFoundError" not in log, log
