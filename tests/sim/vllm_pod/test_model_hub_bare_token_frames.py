"""The frame under ``run_server`` above huggingface_hub's LocalTokenNotFoundError (a bare ``--hf-token``, no token in
the pod) is ``create_engine_config``'s own call at the release's line (``sim.vllm_pod.hub_token.frames``): from 0.19.0
``maybe_override_with_speculators(``, called before any ModelConfig exists (engine/arg_utils.py@0.19.0 l.1539,
@0.34.0 l.2303), before it ``model_config = self.create_model_config()`` (arg_utils.py@0.8.5 l.1099, @0.18.0
l.1508). End to end as tests/sim/vllm_pod/test_model_hub_bare_token.py: the served cluster, the kubernetes client,
the pods asking tests/fixtures/hf_hub_server through HF_ENDPOINT.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server, use_hub
from fixtures.served_pods import run, served

MODEL = "acme-corp/SmolLM2-Bare-Flag-Frames"
ARGS = ["--model", MODEL, "--hf-token", "--max-model-len", "4096"]
ENGINE = '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line {}, in create_engine_config'


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({MODEL: Repo({"config.json": SMOLLM2_CONFIG})}) as server:
        use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=5, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


#: release -> (create_engine_config's line, its code, the frame below it)
CALLED = {"0.34.0": (2303, "maybe_override_with_speculators(", "in maybe_override_with_speculators"),
          "0.19.0": (1539, "maybe_override_with_speculators(", "in maybe_override_with_speculators"),
          "0.18.0": (1508, "model_config = self.create_model_config()", "in create_model_config"),
          "0.8.5": (1099, "model_config = self.create_model_config()", "in create_model_config")}


@pytest.mark.parametrize("release", list(CALLED))
def test_create_engine_config_calls_what_the_release_calls_first(api, hub, release: str) -> None:
    """Before: every release printed ``model_config = self.create_model_config()`` at line 1049, the stage's."""
    log, code = run(api, f"bare-frames-{release.replace('.', '-')}", f"vllm/vllm-openai:v{release}", None, ARGS)
    assert code == 1 and "LocalTokenNotFoundError" in log, log[-2000:]
    lines = [line.removeprefix("(APIServer pid=1) ") for line in log.splitlines()]
    at, code_line, below = CALLED[release]
    engine = [i for i, line in enumerate(lines) if line.endswith(", in create_engine_config")]
    assert len(engine) == 1, log[-4000:]
    assert lines[engine[0]] == ENGINE.format(at) and lines[engine[0] + 1] == f"    {code_line}", lines[engine[0]:]
    assert lines[engine[0] + 2].endswith(below), lines[engine[0]:]
