"""A rehearsal pod whose Hub has no such repository, refuses the connection or answers 500 ends in its release's own
words (``sim.vllm_pod.hub_refusal``), not in vLLM's generic "Invalid repository ID" where that release never prints it,
and ``diagnose`` tells a Hub it could not reach from a wrong --model.

End to end: the rehearsal cluster served over HTTP and driven with the official ``kubernetes`` client, the pods asking
tests/fixtures/hf_hub_server through HF_ENDPOINT (a pod's own HF_ENDPOINT at a closed port for the refused
connection), the log read back with the real CLI's ``diagnose``. The expected words were measured with transformers
4.57.1 / huggingface_hub 0.35.3 and transformers 5.0.0 / huggingface_hub 1.33.0 calling ``get_config_dict`` against
the same server, as vLLM 0.11+'s ``maybe_override_with_speculators`` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import hf_hub_server
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server
from fixtures.served_pods import run, served

MISSING, FLAKY = "acme-corp/SmolLM2-No-Such-Repo", "acme-corp/SmolLM2-Answers-500"
CLOSED = "http://127.0.0.1:1"  # nothing listens there: the connection is refused at once
INVALID = "Invalid repository ID or local directory specified"
NO_HUB = ("LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub and we cannot find "
          "the requested files in the local cache.")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({
            FLAKY: Repo({"config.json": SMOLLM2_CONFIG}, misbehave="error-500")}) as server:
        hf_hub_server.use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=1, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


#: case -> (the pod's env, its model)
CASES: dict[str, tuple[dict[str, str], str]] = {
    "missing": ({}, MISSING),
    "refused": ({"HF_ENDPOINT": CLOSED}, FLAKY),
    "error-500": ({}, FLAKY),
}
#: (release, case, lines its log holds, whether vLLM's own message wraps it, diagnose's reason)
EXPECTED = [
    ("0.6.6", "missing", [f"ValueError: No supported config format found in {MISSING}"], False, "not_found"),
    ("0.6.6", "refused", ["requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=1): Max "
                          f"retries exceeded with url: /{FLAKY}/resolve/main/config.json", "[Errno 111] Connection "
                          "refused"], False, "hub_unreachable"),
    ("0.8.5", "missing", ["huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error.",
                          f"/api/models/{MISSING}/tree/main?recursive=False&expand=False."], True,
     "repository_not_found"),
    ("0.8.5", "refused", ["requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=1)"], True,
     "hub_unreachable"),
    ("0.8.5", "error-500", ["huggingface_hub.errors.HfHubHTTPError: 500 Server Error: Internal Server Error for url: "],
     True, "hub_unreachable"),
    ("0.19.0", "missing", ["huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error.",
                           f"OSError: {MISSING} is not a local folder and is not a valid model identifier listed on "
                           "'https://huggingface.co/models'", "line 1539, in create_engine_config",
                           "line 583, in maybe_override_with_speculators", "line 511, in cached_files"], False,
     "repository_not_found"),
    ("0.19.0", "refused", [NO_HUB, f"OSError: We couldn't connect to '{CLOSED}' to load the files, and couldn't find "
                           "them in the cached files.", "line 553, in cached_files"], False, "hub_unreachable"),
    ("0.19.0", "error-500", ["requests.exceptions.HTTPError: 500 Server Error: Internal Server Error for url: ", NO_HUB,
                             "OSError: We couldn't connect to "], False, "hub_unreachable"),
    ("0.25.0", "missing", ["make sure you are authenticated and your token has the required permissions.",
                           f"OSError: {MISSING} is not a local folder", "line 449, in cached_files"], False,
     "repository_not_found"),
    ("0.25.0", "refused", ["httpx.ConnectError: [Errno 111] Connection refused", NO_HUB], False, "hub_unreachable"),
    ("0.25.0", "error-500", ["HfHubHTTPError: Server error '500 Internal Server Error' for url ", NO_HUB], False,
     "hub_unreachable"),
]


def start(api: Any, name: str, version: str, env: dict[str, str], model: str) -> tuple[str, int | None]:
    return run(api, name, f"vllm/vllm-openai:v{version}", None, ["--model", model, "--max-model-len", "4096"], env=env)


@pytest.mark.parametrize("version, case, lines, wrapped, reason", EXPECTED,
                         ids=[f"{v}-{c}" for v, c, _, _, _ in EXPECTED])
def test_each_release_words_a_missing_repository_and_a_hub_it_cannot_reach(
        api, hub, cli, tmp_path: Path, version: str, case: str, lines: list[str], wrapped: bool, reason: str) -> None:
    """Before: each ended in vLLM's generic refusal ("Invalid repository ID" from 0.8, transformers' "is not a local
    folder" before), with no huggingface_hub error, no frames of transformers' read, and ``diagnose`` read a Hub that
    could not be reached as a wrong --model."""
    env, model = CASES[case]
    log, code = start(api, f"{case}-{version.replace('.', '-')}", version, env, model)
    assert code == 1, log[-2000:]
    for line in lines:
        assert line in log, (line, log[-4000:])
    assert (INVALID in log) is wrapped, log[-4000:]
    saved = tmp_path / "pod.log"
    saved.write_text(log)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["reason"]) == ("model_unavailable", reason), data
