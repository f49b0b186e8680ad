"""Kubernetes expands ``$(X)`` in exec-form args before vLLM's argparse reads them, one word each: a bare ``$(X)`` whose
value is an option is that option (not the model tag), and one whose value cannot be read leaves ``--model`` standing
with the word a hidden argument (it may be a flag or a model tag). Real kubelet rule: an undefined X stays literal."""

from __future__ import annotations

from vllm_remedy.vllm.cmdline import find_server

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _server(args: list[str], env: list[dict]):
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "args": ["--model", LLAMA, *args], "env": env}
    return find_server({"containers": [container]})


def test_a_variable_that_expands_to_an_option_is_that_option():
    got = _server(["--max-model-len", "4096", "$(KVF)"], [{"name": "KVF", "value": "--kv-cache-memory-bytes=60G"}])
    assert got.model == LLAMA and got.model_token is None
    assert got.flags == {"max-model-len": "4096", "kv-cache-memory-bytes": "60G"} and got.hidden == ()


def test_an_expanded_option_takes_the_next_word_as_its_value():
    got = _server(["$(LEN)", "8192"], [{"name": "LEN", "value": "--max-model-len"}])
    assert got.model == LLAMA and got.flags == {"max-model-len": "8192"} and got.positionals == []


def test_an_unreadable_variable_leaves_model_standing_and_is_hidden():
    secret = [{"name": "KVF", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "args"}}}]
    got = _server(["--max-model-len", "4096", "$(KVF)"], secret)
    assert got.model == LLAMA and got.model_token is None and got.hidden == ("$(KVF)",)


def test_an_undefined_variable_stays_literal_and_is_a_word_vllm_reads():
    got = _server(["--max-model-len", "4096", "$(UNDEF)"], [])
    # the v0.11.0 image runs the api_server module (docker/Dockerfile@v0.11.0): --model names the model, and the
    # literal word is a positional the module's parser reads (its model_tag, which it does not use), not hidden
    assert got.model == LLAMA and [t.value for t in got.positionals] == ["$(UNDEF)"] and got.hidden == ()
