"""`estimate` and `plan` take ``--hf-overrides`` and ``--hf-config-path`` as vLLM spells them, applied as ``check``
applies a manifest's (``vllm.hf_overrides``): the same answer both ways. What the release's parser refuses is
argparse's refusal (exit 2, one line naming the flag); an override the tools cannot size is "cannot predict"."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli
from fixtures.hf_hub_server import SMOLLM2_CONFIG, SMOLLM2_ID, Repo, hub_server
from fixtures.vllm_deployment import manifest
from vllm_remedy.commands import _hf_flags
from vllm_remedy.errors import UserError

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
BASE = ["--gpu-memory-utilization", "0.9", "--max-num-seqs", "64", "--max-model-len", "16384"]
HALF = [*BASE, "--hf-overrides", '{"num_hidden_layers": 16}']
ESTIMATE = ["--model", LLAMA, "--gpu", "NVIDIA-L40S", "--vllm-version", "0.10.2"]
FIGURES = ("weights_gib", "kv_cache_gib", "kv_cache_tokens", "gpu_blocks", "max_concurrency", "peak_gib")
TEXT = {"hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 8,
        "intermediate_size": 8192, "vocab_size": 32000, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}
NESTED = '{"text_config": {"num_hidden_layers": 8}}'


def _one_line(got) -> str:
    assert got.returncode == 2 and got.stdout == "" and got.stderr.count("\n") == 1, (got.stdout, got.stderr)
    return got.stderr


@pytest.fixture(scope="module")
def half() -> dict:
    """`estimate -o json` of Llama 3.1 8B with half its layers by --hf-overrides (one CLI start for the module)."""
    got = run_cli("estimate", *ESTIMATE, *HALF, "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def test_estimate_gives_what_check_gives_for_the_same_flags(half, tmp_path):
    path = manifest(tmp_path, HALF, image="vllm/vllm-openai:v0.10.2", model=LLAMA)
    checked = run_cli("check", "-f", path, "-o", "json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    sized = json.loads(checked.stdout)["items"][0]["prediction"]["estimate"]
    assert {k: half[k] for k in FIGURES} == {k: sized[k] for k in FIGURES}
    assert half["weights_gib"] < 9.0  # 16 of 32 layers: ~8.6 GiB, not the checkpoint's 15.06
    assert half["flags"]["hf-overrides"] == '{"num_hidden_layers": 16}'  # what it was sized for


@pytest.mark.parametrize(("flags", "version", "words"), [
    ({"hf-overrides": "{}"}, "0.6.3", 'hf-overrides: vLLM 0.6.3 has no such flag (added in 0.6.4); it refuses the '
                                      'argument at parsing (argparse: "unrecognized arguments: --hf-overrides {}")'),
    ({"hf-config-path": "acme/cfg"}, "0.7.3", "hf-config-path: vLLM 0.7.3 has no such flag (added in 0.8.0)"),
    ({"hf-overrides": "{x}"}, "0.8.5", "argument --hf-overrides: invalid loads value: '{x}'"),
    ({"hf-overrides": "{x}"}, "0.10.2", "argument --hf-overrides: Value {x} cannot be converted to <function loads"),
])
def test_what_the_release_parser_refuses(flags, version, words):
    with pytest.raises(UserError) as exc:
        _hf_flags.refusal(flags, version)
    assert words in str(exc.value)


@pytest.mark.parametrize(("flags", "version"), [({"hf-overrides": "{}"}, "0.6.4"), ({"hf-config-path": "a/b"}, "0.8.0"),
                                                ({"hf-overrides": "xyz"}, "0.10.2")])
def test_what_the_release_parser_takes(flags, version):
    _hf_flags.refusal(flags, version)  # no refusal: 0.9.0+ keeps text without braces as a string


def test_a_release_without_the_flag_refuses_it(cli):
    err = _one_line(cli("estimate", *ESTIMATE[:4], "--vllm-version", "0.6.3", "--hf-overrides",
                        '{"num_hidden_layers": 16}'))
    assert "hf-overrides: vLLM 0.6.3 has no such flag (added in 0.6.4)" in err, err


def test_malformed_json_is_argparses_refusal_in_one_line(cli):
    err = _one_line(cli("estimate", *ESTIMATE[:4], "--vllm-version", "0.8.5", "--hf-overrides",
                        '{"num_hidden_layers": }'))
    assert err == ("vllm-remedy: error: hf-overrides: vLLM 0.8.5 refuses the value at argument parsing (argparse: "
                   "\"argument --hf-overrides: invalid loads value: '{\"num_hidden_layers\": }'\")\n"), err


def test_an_unread_key_is_cannot_predict_naming_it(cli):
    err = _one_line(cli("estimate", *ESTIMATE, "--hf-overrides", '{"num_hidden_layers": 16, "foo_bar": 1}'))
    assert "cannot predict: --hf-overrides key(s) foo_bar: not read" in err, err


@pytest.mark.parametrize(("version", "layers"), [("0.11.0", None), ("0.12.0", 8)])
def test_a_nested_override_merges_from_0_12(cli, tmp_path, version, layers):
    """Before 0.12.0 the dict replaces the whole text_config (not a config the tools size: cannot predict); from
    0.12.0 it merges, so 8 of 24 layers are sized (a third of the weights' layers, a third of the KV per token)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "text_config": TEXT}))
    got = cli("estimate", "--model-config", str(config), "--gpu", "NVIDIA-L4", "--max-model-len", "8192",
              "--vllm-version", version, "--hf-overrides", NESTED, "-o", "json")
    if layers is None:  # the replaced text_config lacks what the model is sized from: no number
        line = _one_line(got)
        assert got.returncode == 2 and line.startswith("vllm-remedy: error: cannot predict: --hf-overrides"), line
        return
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["weights_gib"] < 1.5 and data["kv_cache_tokens"] > 3 * 175712, data  # 3.16 GiB, 175,712 at 24


def _online(home: Path, url: str, *args: str):
    saved = dict(os.environ)
    os.environ.update({"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": url})
    try:
        return run_cli("estimate", *args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_the_config_path_names_another_repository_on_the_hub(tmp_path):
    """--hf-config-path acme/... sizes that repository's config (SmolLM2's, ~3.2 GiB of weights), not the model's
    (Llama 3.1 8B, 15 GiB); the model's own config is not fetched."""
    with hub_server({"acme-corp/smol-config": Repo({"config.json": SMOLLM2_CONFIG})}) as hub:
        got = _online(tmp_path, hub.url, "--model", SMOLLM2_ID, "--gpu", "NVIDIA-L4", "--max-model-len", "8192",
                      "--hf-config-path", "acme-corp/smol-config", "-o", "json")
        requests = [r for r in hub.requests if "/resolve/" in r[1] and not r[1].endswith("/hf_quant_config.json")]
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert 3.0 < data["weights_gib"] < 3.5 and data["flags"]["hf-config-path"] == "acme-corp/smol-config", data
    assert requests == [("GET", "/acme-corp/smol-config/resolve/main/config.json")]  # one GET, nothing else


def test_the_config_path_may_be_a_local_directory(cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(SMOLLM2_CONFIG))
    got = cli("estimate", *ESTIMATE, "--hf-config-path", str(tmp_path), "-o", "json")
    assert got.returncode == 0, got.stderr
    assert 3.0 < json.loads(got.stdout)["weights_gib"] < 3.5, got.stdout


def test_plan_plans_the_overridden_model(half, tmp_path):
    """At 20 concurrent requests the checkpoint (12.2x) needs a change; with half its layers (30.9x) it does not,
    typed or read from the manifest, and the current prediction is the estimate's."""
    typed = run_cli("plan", *ESTIMATE, *HALF, "--target-concurrency", "20", "-o", "json")
    assert typed.returncode == 0, typed.stdout + typed.stderr
    data = json.loads(typed.stdout)
    assert data["verdict"] == "no_change_needed" and data["flags"]["hf-overrides"] == '{"num_hidden_layers": 16}'
    assert data["current"]["kv_cache_tokens"] == half["kv_cache_tokens"], data["current"]
    path = manifest(tmp_path, HALF, image="vllm/vllm-openai:v0.10.2", model=LLAMA)
    read = run_cli("plan", "-f", path, "--target-concurrency", "20")
    assert read.returncode == 0 and "no change needed" in read.stdout, read.stdout + read.stderr
