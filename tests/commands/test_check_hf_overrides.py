"""``--hf-overrides`` and ``--hf-config-path`` (``vllm.hf_overrides``): vLLM applies a JSON dict to the HF config
before deriving the length, the layers and the weights (config/__init__.py@0.10.2 ``get_config(...,
hf_overrides_kw=...)``), and reads the config from ``--hf-config-path`` when given. ``check`` sizes the overridden
config; a key it does not read, or a config path inside the pod, is "cannot predict"; text the release's parser
refuses is argparse's refusal. The rehearsal pod, reading the same argv on its own, starts where check says it does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from fixtures.check_batch import Alone, judge_text
from fixtures.sim_world import l40s_pod_cluster
from fixtures.vllm_deployment import manifest

DEFAULT_POLICY = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
IMAGE = "vllm/vllm-openai:v0.10.2"
BASE = ["--gpu-memory-utilization", "0.9", "--max-num-seqs", "64", "--max-model-len", "16384"]
LONG = ["--max-model-len", "150000", "--hf-overrides", '{"max_position_embeddings": 262144}']


HALF = [*BASE, "--hf-overrides", '{"num_hidden_layers": 16}']
UNREAD = [*BASE, "--hf-overrides", '{"num_hidden_layers": 16, "foo_bar": 1}']
IN_POD = [*BASE, "--hf-config-path", "/cfg"]
MALFORMED = [*BASE, "--hf-overrides", '{"num_hidden_layers": }']
#: Every (args, image) `check` judges here under the default policy, as one Deployment each of one file (``checked``).
#: Each flag in the last release before it (engine/arg_utils.py@0.6.3 has no --hf-overrides, @0.7.3 no
#: --hf-config-path) and in the first with it.
BEFORE = [(tuple(HALF), "vllm/vllm-openai:v0.6.3", "unrecognized arguments: --hf-overrides"),
          (tuple(HALF), "vllm/vllm-openai:v0.6.4", None),
          (tuple([*BASE, "--hf-config-path", LLAMA]), "vllm/vllm-openai:v0.7.3",
           "unrecognized arguments: --hf-config-path"),
          (tuple([*BASE, "--hf-config-path", LLAMA]), "vllm/vllm-openai:v0.8.0", None)]
CASES = [(tuple(args), IMAGE) for args in (BASE, HALF, LONG[:2], LONG, UNREAD, IN_POD)] + [
    (tuple(MALFORMED), f"vllm/vllm-openai:{tag}") for tag in ("v0.8.5", "v0.10.2")] + [
    (args, image) for args, image, _ in BEFORE]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[tuple[str, ...], str], Alone]:
    """Every case of ``CASES`` as one Deployment (case-N) of one file, judged by one real text `check` run (one CLI
    start instead of one per case: the suite's time budget), by (args, image)."""
    tmp = tmp_path_factory.mktemp("hf-overrides")
    docs = []
    for i, (args, image) in enumerate(CASES):
        docs.append(yaml.safe_load(Path(manifest(tmp, list(args), image=image, model=LLAMA)).read_text()))
        docs[-1]["metadata"]["name"] = f"case-{i}"
    alone = judge_text(docs, tmp)
    return {case: alone[f"case-{i}"] for i, case in enumerate(CASES)}


def _check(checked: dict, args: list[str], image: str = IMAGE) -> Alone:
    return checked[(tuple(args), image)]


def _concurrency(out: str) -> float:
    return float(re.search(r"maximum concurrency ([0-9.]+)x", out).group(1))


def test_overridden_layers_are_sized(checked):
    full = _check(checked, BASE)
    half = _check(checked, HALF)
    assert full.returncode == half.returncode == 0, half.stdout + half.stderr
    # half the layers: half the KV per token and ~7.5 GB less weights, so well over twice the concurrency
    assert _concurrency(half.stdout) > 2 * _concurrency(full.stdout), (full.stdout, half.stdout)


def test_overridden_length_is_not_refused(checked):
    plain = _check(checked, LONG[:2])
    assert "predicted max_len_exceeds_model" in plain.stdout, plain.stdout
    got = _check(checked, LONG)  # it starts (its concurrency is the policy's business, not vLLM's refusal)
    assert "max_len_exceeds_model" not in got.stdout and "start [error]" not in got.stdout, got.stdout + got.stderr
    assert "predicted maximum concurrency 1.28x on NVIDIA-L40S" in got.stdout, got.stdout


def test_an_unread_key_is_cannot_predict_naming_it(checked):
    got = _check(checked, UNREAD)
    assert "model [unknown]: cannot predict: --hf-overrides key(s) foo_bar: not read" in got.stdout, got.stdout
    assert "num_hidden_layers" not in got.stdout.split("foo_bar")[0].split("key(s)")[1]


def test_a_config_path_in_the_pod_is_cannot_predict(checked):
    got = _check(checked, IN_POD)
    assert "model [unknown]: cannot predict: --hf-config-path /cfg: " in got.stdout, got.stdout
    assert "fits" not in got.stdout


def test_the_policys_model_config_names_the_config_path(cli, tmp_path, checked):
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 16,
              "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
              "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
    (tmp_path / "cfg.json").write_text(json.dumps(config))
    (tmp_path / "policy.yaml").write_text(f"extends: {DEFAULT_POLICY}\nmodel_config: {{path: cfg.json}}\n")
    path = manifest(tmp_path, IN_POD, image=IMAGE, model=LLAMA)
    got = cli("check", "-f", path, "--policy", str(tmp_path / "policy.yaml"))
    assert "fits on NVIDIA-L40S" in got.stdout, got.stdout + got.stderr
    full = _check(checked, BASE)  # the config at /cfg (16 layers) is sized, not the repository's (32)
    assert _concurrency(got.stdout) > 2 * _concurrency(full.stdout), (full.stdout, got.stdout)


@pytest.mark.parametrize(("tag", "words"), [
    ("v0.8.5", "argument --hf-overrides: invalid loads value: '{\"num_hidden_layers\": }'"),
    ("v0.10.2", "argument --hf-overrides: Value {\"num_hidden_layers\": } cannot be converted to <function loads"),
])
def test_malformed_json_is_argparses_refusal(checked, tag, words):
    got = _check(checked, MALFORMED, image=f"vllm/vllm-openai:{tag}")
    assert got.returncode == 1 and words in got.stdout, got.stdout + got.stderr


@pytest.mark.parametrize(("args", "image", "words"), BEFORE)
def test_a_release_before_the_flag_refuses_it_at_argument_parsing(checked, args, image, words):
    got = _check(checked, list(args), image=image)
    if words is None:
        assert "argument parsing" not in got.stdout, got.stdout
    else:
        assert got.returncode == 1 and words in got.stdout and "argument parsing" in got.stdout, got.stdout


def _pod(path: str, name: str) -> dict:
    template = yaml.safe_load(Path(path).read_text())["spec"]["template"]
    container = dict(template["spec"]["containers"][0], ports=[{"containerPort": 8000}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "llm"},
            "spec": {**template["spec"], "containers": [container]}}


def test_the_rehearsal_pod_applies_the_overrides_too(tmp_path):
    (tmp_path / "plain").mkdir()
    plain = manifest(tmp_path / "plain", LONG[:2], image=IMAGE, model=LLAMA)
    longer = manifest(tmp_path, LONG, image=IMAGE, model=LLAMA)
    with l40s_pod_cluster(2) as cluster:
        cluster.store.create("pods", _pod(plain, "plain"))
        cluster.store.create("pods", _pod(longer, "longer"))

        def status(name: str) -> dict:
            pod = cluster.store.get("pods", "llm", name)
            return next(iter((pod.get("status") or {}).get("containerStatuses") or []), {})

        assert cluster.wait_for(lambda: "CrashLoopBackOff" in str(status("plain").get("state")), 8), status("plain")
        # no readiness probe here, so Ready says nothing: the server's own line does, and no restart
        assert cluster.wait_for(lambda: "Application startup complete" in cluster.read_log("llm", "longer"), 8), \
            cluster.read_log("llm", "longer")[-2000:]
        assert status("longer").get("restartCount") == 0, status("longer")
