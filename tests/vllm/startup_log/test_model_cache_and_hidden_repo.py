"""Two start failures ``diagnose`` used to misread:

- the public Hub's answer to a misspelled (or private) repository id asked without a token, 401 RepoNotFound
  "Invalid username or password.", which huggingface_hub raises as RepositoryNotFoundError: a wrong --model first,
  a token only for a private repository — not "the Hub refused the token", which is its "Invalid credentials in
  Authorization header" (a plain 401). Lines as public logs quote them: vast-ai/base-image#128 (a recent vLLM, an id
  that never existed), tmylla/NER_ZH#1 (a local path sent as an id), open-webui/open-webui#4773 (requests' raw 401
  printed first, as the cause).
- an HF cache the pod's user may not write that is not a read-only mount: errno 13 on '/.cache' (a non-root pod
  whose HOME is /) or on a root-owned volume's hub folder, "unknown" before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log

HEAD = ("(APIServer pid=1) INFO 12-06 12:42:14 [api_server.py:1] vLLM API server version 0.19.0\n"
        "(APIServer pid=1) Traceback (most recent call last):\n"
        '(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1049, in '
        "create_engine_config\n"
        "(APIServer pid=1)     model_config = self.create_model_config()\n")
TYPO = "\n".join("(APIServer pid=1) " + line for line in [
    "huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-0000;0000)",
    "",
    "Repository Not Found for url: https://huggingface.co/Qwen/Qwen3.5-27B-AWQ/resolve/main/config.json.",
    "Please make sure you specified the correct `repo_id` and `repo_type`.",
    "If you are trying to access a private or gated repo, make sure you are authenticated. For more details, see "
    "https://huggingface.co/docs/huggingface_hub/authentication",
    "Invalid username or password.",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    "OSError: Qwen/Qwen3.5-27B-AWQ is not a local folder and is not a valid model identifier listed on "
    "'https://huggingface.co/models'"]) + "\n"
RAW_401_FIRST = ("requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
                 "https://huggingface.co/sentence-transformers/ollama/resolve/main/config.json\n\n"
                 "The above exception was the direct cause of the following exception:\n\n"
                 "Traceback (most recent call last):\n"
                 "huggingface_hub.utils._errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-0)\n\n"
                 "Repository Not Found for url: "
                 "https://huggingface.co/sentence-transformers/ollama/resolve/main/config.json.\n"
                 "Invalid username or password.\n")
BAD_TOKEN = ("requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
             "https://huggingface.co/acme/llama-7b/resolve/main/config.json\n\n"
             "The above exception was the direct cause of the following exception:\n\n"
             "Traceback (most recent call last):\n"
             "huggingface_hub.errors.HfHubHTTPError: 401 Client Error: Unauthorized for url: "
             "https://huggingface.co/acme/llama-7b/resolve/main/config.json (Request ID: Root=1-0)\n\n"
             "Invalid credentials in Authorization header\n")


@pytest.mark.parametrize("tail, reason, model", [
    (TYPO, "repository_not_found", "Qwen/Qwen3.5-27B-AWQ"),
    (RAW_401_FIRST, "repository_not_found", "sentence-transformers/ollama"),
    (BAD_TOKEN, "unauthorized", "acme/llama-7b"),
    ("PermissionError: [Errno 13] Permission denied: '/.cache'\n", "cache_not_writable", None),
    ("PermissionError: [Errno 13] Permission denied: '/models/hf/hub/models--meta-llama--Llama-3.1-8B-Instruct'\n",
     "cache_not_writable", "meta-llama/Llama-3.1-8B-Instruct"),
    # transformers' wording of the same PermissionError (utils/hub.py@4.57.1 l.523-528): not a read-only mount
    ("OSError: PermissionError at /.cache when downloading acme/llama-7b. Check cache directory permissions. Common "
     "causes: 1) another user is downloading the same model (please wait); 2) a previous download was canceled and "
     "the lock file needs manual removal.\n", "cache_not_writable", "acme/llama-7b"),
], ids=["public-hub-typo", "raw-401-first", "bad-token", "home-slash", "root-owned-volume", "transformers-words"])
def test_the_hubs_hidden_repository_and_an_unwritable_cache(tail: str, reason: str, model: str | None) -> None:
    """Before: the first two were "unauthorized" (give the pod a valid HF_TOKEN) for a typo; the errno 13 lines
    "unknown", transformers' wording of them cache_read_only (advice for a read-only mount)."""
    report = parse_startup_log(HEAD + tail)
    assert report.failure is Failure.MODEL_UNAVAILABLE, report.failure
    assert report.failure_detail["reason"] == reason, report.failure_detail
    assert report.failure_detail.get("model") == model


def test_a_permission_error_outside_any_cache_is_not_the_model(tmp_path: Path) -> None:
    report = parse_startup_log(HEAD + "PermissionError: [Errno 13] Permission denied: '/etc/vllm/secret.yaml'\n")
    assert report.failure is not Failure.MODEL_UNAVAILABLE


@pytest.mark.parametrize("tail, words", [
    (TYPO, "correct --model: the Hub shows no repository by that id"),
    ("PermissionError: [Errno 13] Permission denied: '/.cache'\n",
     "point HF_HOME (or HF_HUB_CACHE) at a writable volume (an emptyDir), give the volume the pod's group "
     "(securityContext.fsGroup), or pre-load the model into it"),
], ids=["typo", "home-slash"])
def test_diagnose_advises_the_fix(cli, tmp_path: Path, tail: str, words: str) -> None:
    log = tmp_path / "pod.log"
    log.write_text(HEAD + tail)
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["failure"] == "model_unavailable", data
    assert words in data["hint"], data["hint"]
    assert "valid HF_TOKEN" not in data["hint"], data["hint"]
