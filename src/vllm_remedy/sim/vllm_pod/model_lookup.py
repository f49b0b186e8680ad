"""Where a rehearsal pod's vLLM finds its model, and the words it ends with when there is none (split from ``launch``,
which decides the start)."""

from __future__ import annotations

from vllm_remedy import hub
from vllm_remedy.errors import UserError
from vllm_remedy.vllm import resolved
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version


def model_spec(model_id: str, revision: str | None) -> ModelSpec:
    """The model as vLLM would find it: the catalog, a config the world ships (``models:`` in its seed), then the
    Hugging Face cache and Hub the way the tools resolve it (``hub``); a UserError when none has it."""
    try:
        return resolved.model(model_id, revision)
    except UserError:
        pass
    shipped = resolved.known(model_id, None)
    if isinstance(shipped, ModelSpec):
        return shipped
    return hub.resolve(model_id, revision, in_pod=True)[0]  # a local path is the pod's volume, not this machine's


def no_model_error(version: str, model_id: str) -> str:
    """What vLLM raises for a model id that is neither a Hugging Face repo nor a local folder."""
    if (parse_version(version) or NEWEST_RELEASE) >= (0, 8, 0):
        return (f"ValueError: Invalid repository ID or local directory specified: '{model_id}'.\n"
                "Please verify the following requirements:\n"
                "1. Provide a valid Hugging Face repository ID.\n"
                "2. Specify a local directory that contains a recognized configuration file.\n"
                "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
                "   - For Mistral models: ensure the presence of a 'params.json'.")
    return (f"OSError: {model_id} is not a local folder and is not a valid model identifier listed on "
            "'https://huggingface.co/models'\nIf this is a private repository, make sure to pass a token having "
            "permission to this repo either by logging in with `huggingface-cli login` or by passing "
            "`token=<your_token>`")
