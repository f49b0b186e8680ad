"""A start that dies because vLLM cannot get the model's config.json is ``model_unavailable``, not ``unknown``: vLLM's
"Invalid repository ID or local directory specified" (from 0.8), transformers' "is not a local folder" before it,
huggingface_hub's RepositoryNotFoundError / RevisionNotFoundError / GatedRepoError and a bare 401 in the traceback.

The wording of each line is the libraries' own, as public reports quote them: vllm-project/vllm#13510 and #17287
(vLLM's message), vllm-project/vllm#8331 (0.6.0: a 401, then the gated repository), vllm-project/vllm#5727 and #12867
(HFValidationError for a path that is not there), zylon-ai/private-gpt#1985 (transformers' gated-repo OSError).
"""

from __future__ import annotations

import json

import pytest

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log

V060_HEAD = ("INFO 11-15 09:07:03 api_server.py:495] vLLM API server version 0.6.0\n"
             "INFO 11-15 09:07:03 api_server.py:496] args: Namespace(model='meta-llama/Meta-Llama-3-8B-Instruct', "
             "revision=None, tensor_parallel_size=1)\n"
             "Traceback (most recent call last):\n"
             '  File "/usr/local/lib/python3.10/dist-packages/huggingface_hub/utils/_errors.py", line 304, in '
             "hf_raise_for_status\n"
             "    response.raise_for_status()\n")
GATED_V060 = V060_HEAD + (
    "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
    "https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct/resolve/main/config.json\n"
    "\nThe above exception was the direct cause of the following exception:\n\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/huggingface_hub/utils/_errors.py", line 321, in '
    "hf_raise_for_status\n"
    "    raise GatedRepoError(message, response) from e\n"
    "huggingface_hub.utils._errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-0000;0000)\n\n"
    "Cannot access gated repo for url https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct/resolve/main/"
    "config.json.\n"
    "Access to model meta-llama/Meta-Llama-3-8B-Instruct is restricted. You must be authenticated to access it.\n")
OWN_V0102 = (
    "(APIServer pid=1) INFO 08-20 10:00:00 [api_server.py:1805] vLLM API server version 0.10.2\n"
    "(APIServer pid=1) Traceback (most recent call last):\n"
    '(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1130, in '
    "create_model_config\n"
    "(APIServer pid=1)     return ModelConfig(\n"
    "(APIServer pid=1) ValueError: Invalid repository ID or local directory specified: 'acme/llama-9b-instruct'.\n"
    "(APIServer pid=1) Please verify the following requirements:\n"
    "(APIServer pid=1) 1. Provide a valid Hugging Face repository ID.\n")


@pytest.mark.parametrize("line, reason, model", [
    # vLLM's own message alone: no config found for the id (reason no_config, whose advice names both eras' causes)
    ("ValueError: Invalid repository ID or local directory specified: 'DeepSeek-R1-Distill-Qwen-7B-gptq'.",
     "no_config", "DeepSeek-R1-Distill-Qwen-7B-gptq"),
    ("  Value error, Invalid repository ID or local directory specified: 'orkungedik/docs-7b'.", "no_config",
     "orkungedik/docs-7b"),
    ("OSError: acme/typo-7b is not a local folder and is not a valid model identifier listed on "
     "'https://huggingface.co/models'", "not_found", "acme/typo-7b"),
    ("huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
     "'/mnt/models/llama'. Use `repo_type` argument if needed.", "invalid_id", "/mnt/models/llama"),
    ("huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. (Request ID: Root=1-0000)",
     "repository_not_found", None),
    ("huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. (Request ID: Root=1-0000)",
     "revision_not_found", None),
    ("OSError: You are trying to access a gated repo.", "gated", None),
    ("Cannot access gated repo for url https://huggingface.co/google/gemma-2-9b-it/resolve/main/config.json.",
     "gated", "google/gemma-2-9b-it"),
    ("requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
     "https://huggingface.co/api/models/acme/private-7b/revision/main", "unauthorized", "acme/private-7b"),
])
def test_each_way_the_model_cannot_be_had_is_model_unavailable(line, reason, model):
    report = parse_startup_log("INFO 01-01 00:00:00 api_server.py:1] vLLM API server version 0.6.3\n"
                               "Traceback (most recent call last):\n" + line + "\n")
    assert report.failure is Failure.MODEL_UNAVAILABLE, report.failure
    assert report.failure_detail["reason"] == reason
    assert report.failure_detail.get("model") == model


def test_a_gated_repository_says_so_and_names_it(cli, tmp_path):
    """The 401 comes first in the chained traceback; the gated repository's lines after it say what to fix."""
    log = tmp_path / "gated.log"
    log.write_text(GATED_V060)
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert (data["failure"], data["failure_detail"]["model"]) == (
        "model_unavailable", "meta-llama/Meta-Llama-3-8B-Instruct")
    assert data["failure_detail"]["reason"] == "gated"
    assert data["hint"] == ("step 1: roll back to the last known-good revision, then give the pod HF_TOKEN (from a "
                            "Secret) for an account granted access to the gated repository")


def test_vllms_own_message_names_the_model(cli, tmp_path):
    log = tmp_path / "typo.log"
    log.write_text(OWN_V0102)
    got = cli("diagnose", "--log", str(log))
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0].startswith("model_unavailable: vLLM could not get the model's config.json")


def test_a_401_after_the_server_is_up_is_not_the_start(cli):
    up = ("INFO 01-01 00:00:00 api_server.py:1] vLLM API server version 0.6.3\n"
          "INFO 01-01 00:00:09 launcher.py:19] Available routes are:\n"
          "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
          "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://example.com/hook\n")
    assert parse_startup_log(up).failure is not Failure.MODEL_UNAVAILABLE
