"""A manifest's ``--hf-overrides`` / ``--hf-config-path`` that vLLM's argument parser refuses, or whose value comes
from a variable: ``plan -f`` and ``check`` plan the same fix, and what a rung shows is what that change gives.

* argparse converts every occurrence (engine/arg_utils.py@0.10.1 ``parse_type(json.loads)``), so
  ``--hf-overrides '{bad}' --hf-overrides '{"num_hidden_layers": 8}'`` stops the start at the first. The fix unsets
  the flag, so its rung is sized on the checkpoint's own config (as ``estimate`` without the flag), and its reason
  quotes argparse's refusal of the value, not a missing flag.
* A release before the flag (0.6.3 has no --hf-overrides, 0.7.3 no --hf-config-path) refuses it as unrecognized:
  ``plan -f`` plans it unset, as ``check`` does, instead of stopping on it.
* ``$(J)`` set from a ConfigMap in the same file is what Kubernetes expands before vLLM parses it: both size that
  override; a variable whose value is not known (a Secret) is "cannot predict" in both; ``$$(NL)`` is the literal
  ``$(NL)``, which vLLM parses as text (not a variable).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures.check_batch import blocks
from fixtures.vllm_deployment import manifest

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
A100 = "NVIDIA-A100-SXM4-80GB"
TWICE = ["--max-model-len", "8192", "--hf-overrides", "{bad}", "--hf-overrides", '{"num_hidden_layers": 8}']
#: name: (args, image, GPU, env) — one Deployment each
CASES: dict[str, tuple[list[str], str, str, list[dict] | None]] = {
    "twice": (TWICE, "v0.10.1", A100, None),
    "before-overrides": (["--hf-overrides", '{"num_hidden_layers": 16}'], "v0.6.3", "NVIDIA-L4", None),
    "before-path": (["--max-model-len", "8192", "--hf-config-path", "meta-llama/Llama-3.2-1B"], "v0.7.3",
                    "NVIDIA-L4", None),
    "from-map": (["--max-model-len", "8192", "--hf-overrides", "$(J)"], "v0.10.1", "NVIDIA-L4",
                 [{"name": "J", "valueFrom": {"configMapKeyRef": {"name": "ov", "key": "J"}}}]),
    "from-secret": (["--max-model-len", "8192", "--hf-overrides", "$(J)"], "v0.10.1", "NVIDIA-L4",
                    [{"name": "J", "valueFrom": {"secretKeyRef": {"name": "ov", "key": "J"}}}]),
    "escaped": (["--max-model-len", "8192", "--hf-overrides", "$$(NL)"], "v0.10.1", "NVIDIA-L4",
                [{"name": "NL", "value": '{"num_hidden_layers": 8}'}]),
}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ov", "namespace": "default"},
              "data": {"J": '{"max_position_embeddings": 4096}'}}


def _doc(tmp: Path, name: str) -> dict:
    args, tag, gpu, env = CASES[name]
    doc = yaml.safe_load(Path(manifest(tmp, args, gpu=gpu, image=f"vllm/vllm-openai:{tag}", env=env)).read_text())
    doc["metadata"]["name"] = name
    return doc


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One file per case (``plan -f`` plans a file's first workload), with the ConfigMap beside each Deployment."""
    tmp = tmp_path_factory.mktemp("hf-refused")
    out = {}
    for name in CASES:
        out[name] = tmp / f"{name}.yaml"
        out[name].write_text(yaml.safe_dump_all([CONFIG_MAP, _doc(tmp, name)]))
    return out


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every case judged by one real `check` run of one file (one CLI start), its text by case name."""
    tmp = tmp_path_factory.mktemp("hf-refused-all")
    path = tmp / "all.yaml"
    path.write_text(yaml.safe_dump_all([CONFIG_MAP, *(_doc(tmp, name) for name in CASES)]))
    got = run_cli("check", "-f", str(path))
    assert got.returncode == 1, got.stdout + got.stderr
    out = blocks(got.stdout, path)
    assert set(out) == set(CASES), got.stdout
    return out


def _rung(text: str) -> tuple[str, int, float]:
    """(change, KV tokens, max concurrency) of the plan's first rung."""
    m = re.search(r"^1 +(.+?) {2,}([\d,]+) +([\d.]+)x +fits", text, re.M)
    assert m, text
    return m.group(1).strip(), int(m.group(2).replace(",", "")), float(m.group(3))


def _fix(text: str) -> tuple[str, int, float]:
    """(change, KV tokens, max concurrency) of check's smallest fix."""
    m = re.search(r"smallest fix \(planner\): (.+?) \(predicted fits.*?KV cache ([\d,]+) tokens, maximum concurrency "
                  r"([\d.]+)x", text)
    assert m, text
    return m.group(1), int(m.group(2).replace(",", "")), float(m.group(3))


def _estimate(*args: str) -> tuple[int, float]:
    got = run_cli("estimate", "--model", LLAMA, *args)
    assert got.returncode == 0, got.stdout + got.stderr
    kv = re.search(r"= ([\d,]+) tokens", got.stdout)
    conc = re.search(r"max concurrency +([\d.]+)x", got.stdout)
    assert kv and conc, got.stdout
    return int(kv.group(1).replace(",", "")), float(conc.group(1))


def test_a_refused_first_value_is_unset_and_sized_without_the_override(files, checked):
    got = run_cli("plan", "-f", str(files["twice"]))
    assert got.returncode == 1, got.stdout + got.stderr
    change, kv, conc = _rung(got.stdout)
    assert change == "unset --hf-overrides", got.stdout
    # the promise: the rung's figures are what unsetting gives (the checkpoint's 32 layers, not the 8 overridden)
    assert (kv, conc) == _estimate("--gpu", A100, "--vllm-version", "0.10.1", "--max-model-len", "8192")
    assert "does not have" not in got.stdout, got.stdout
    assert "remove --hf-overrides '{bad}', which vLLM 0.10.1 refuses at argument parsing (argparse: \"argument " \
           "--hf-overrides: Value {bad} cannot be converted" in got.stdout, got.stdout
    assert _fix(checked["twice"]) == (change, kv, conc), checked["twice"]


@pytest.mark.parametrize("name, flag", [("before-overrides", "hf-overrides"), ("before-path", "hf-config-path")])
def test_plan_f_plans_a_flag_the_release_lacks_as_check_does(files, checked, name, flag):
    got = run_cli("plan", "-f", str(files[name]))
    assert got.returncode == 1, got.stdout + got.stderr
    assert f"refuses --{flag} at argument parsing: it has no such flag" in got.stdout, got.stdout
    change, kv, conc = _rung(got.stdout)
    assert change.endswith(f"unset --{flag}"), got.stdout
    assert _fix(checked[name]) == (change, kv, conc), checked[name]
    if name == "before-overrides":  # sized on the checkpoint's config, as estimate without the flag
        length = re.search(r"--max-model-len (\d+)", change).group(1)
        assert (kv, conc) == _estimate("--gpu", "NVIDIA-L4", "--vllm-version", "0.6.3", "--max-model-len", length)


def test_a_variable_from_a_config_map_in_the_file_is_expanded_in_both(files, checked):
    text = checked["from-map"]
    assert "cannot see" not in text and "max_position_embeddings=4096" in text, text
    got = run_cli("plan", "-f", str(files["from-map"]))
    assert got.returncode == 1, got.stdout + got.stderr
    assert "above the allowed 4096" in got.stdout, got.stdout
    assert _fix(text) == _rung(got.stdout), got.stdout


def test_an_unknown_variable_is_cannot_predict_in_both(files, checked):
    assert "--hf-overrides '$(J)' carries a value this tool cannot see (a variable)" in checked["from-secret"]
    got = run_cli("plan", "-f", str(files["from-secret"]))
    assert got.returncode == 2, got.stdout + got.stderr
    assert "cannot predict: --hf-overrides '$(J)' carries a value this tool cannot see (a variable)" in got.stderr


def test_an_escaped_variable_is_its_literal_text(checked):
    text = checked["escaped"]
    assert "'$(NL)'" in text and "cannot see" not in text, text
