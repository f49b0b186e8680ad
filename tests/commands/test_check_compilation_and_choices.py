"""`check` on CUDA graphs turned off or capped through ``--compilation-config`` / ``-O`` (no graph-capture OOM, and no
``--cuda-graph-sizes`` fix next to them), and on values each release's argparse refuses: malformed compilation JSON,
``choices`` and ``type=`` of --block-size, --quantization, --tokenizer-mode, --load-format, --swap-space, --max-num-seqs
(``argument_refused`` in argparse's words; the plan drops them). Hostile review, findings 1-3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures.vllm_deployment import LLAMA, manifest

#: 0.11.0 TP 2 on L4 at 32k: predicted to die capturing CUDA graphs with the default compilation settings.
GRAPH_OOM = ["--tensor-parallel-size", "2", "--max-model-len", "32768"]


GRAPHS_OFF = [
    (["--compilation-config", '{"cudagraph_mode":"NONE"}'], "vllm/vllm-openai:v0.11.0"),
    (["-O0"], "vllm/vllm-openai:v0.11.0"),
    (["-O.cudagraph_mode=NONE"], "vllm/vllm-openai:v0.11.0"),
    (["--compilation-config", '{"level":0}'], "vllm/vllm-openai:v0.11.0"),
    (["--compilation-config", '{"cudagraph_capture_sizes":[1,2,4]}'], "vllm/vllm-openai:v0.11.0"),
    (["--compilation-config", '{"mode":0}'], "vllm/vllm-openai:v0.12.0"),
    (["-O0"], "vllm/vllm-openai:v0.12.0"),
]

REFUSED = [
    (["--compilation-config", "{bad"], "vllm/vllm-openai:v0.11.0",
     "argument --compilation-config/-O: 1 validation error for CompilationConfig\n  Invalid JSON: key must be a string "
     "at line 1 column 2 [type=json_invalid, input_value='{bad', input_type=str]"),
    (["-cc", "{bad"], "vllm/vllm-openai:v0.20.0", "argument --compilation-config/-cc: 1 validation error for "
     "CompilationConfig"),
    # from 0.13.0 CompilationConfig forbids keys it lacks; ``level`` left it in 0.18.0 (``mode`` replaces it)
    (["--compilation-config", '{"level":0}'], "vllm/vllm-openai:v0.20.0", "argument --compilation-config/-cc: 1 "
     "validation error for CompilationConfig\nlevel\n  Unexpected keyword argument [type=unexpected_keyword_argument"),
    (["-cc.level=0"], "vllm/vllm-openai:v0.20.0", "level\n  Unexpected keyword argument"),
    # from 0.12.0 -O is no option of its own: only `-O <0-3>` becomes --optimization-level
    (["-O", '{"cudagraph_mode":"NONE"}'], "vllm/vllm-openai:v0.20.0",
     'unrecognized arguments: -O {"cudagraph_mode":"NONE"}'),
    (["--compilation-config", '{"max_capture_size":8}'], "vllm/vllm-openai:v0.14.0", "max_capture_size\n  Unexpected"),
    (["--block-size", "7"], "vllm/vllm-openai:v0.11.0",
     "argument --block-size: invalid choice: 7 (choose from 1, 8, 16, 32, 64, 128)"),
    (["--block-size", "256"], "vllm/vllm-openai:v0.11.0",
     "argument --block-size: invalid choice: 256 (choose from 1, 8, 16, 32, 64, 128)"),
    (["--block-size", "abc"], "vllm/vllm-openai:v0.12.0", "argument --block-size: invalid int value: 'abc'"),
    (["--quantization", "nonsense"], "vllm/vllm-openai:v0.11.0",
     "argument --quantization/-q: invalid choice: 'nonsense' (choose from 'auto-round', 'awq', "),
    (["-q", "nonsense"], "vllm/vllm-openai:v0.8.5",
     "argument --quantization/-q: invalid choice: 'nonsense' (choose from 'aqlm', 'awq', 'deepspeedfp', "),
    (["--tokenizer-mode", "zzz"], "vllm/vllm-openai:v0.11.0",
     "argument --tokenizer-mode: invalid choice: 'zzz' (choose from 'auto', 'custom', 'mistral', 'slow')"),
    (["--load-format", "zzz"], "vllm/vllm-openai:v0.8.5", "argument --load-format: invalid choice: 'zzz' (choose "
     "from 'auto', 'pt', 'safetensors', "),
    (["--swap-space", "abc"], "vllm/vllm-openai:v0.11.0", "argument --swap-space: invalid float value: 'abc'"),
    (["--max-num-seqs", "abc"], "vllm/vllm-openai:v0.11.0", "argument --max-num-seqs: invalid int value: 'abc'"),
]

TAKEN = [
    (["--block-size", "256"], "vllm/vllm-openai:v0.12.0"),  # 256 joined the Literal in 0.12.0
    (["--block-size", "7"], "vllm/vllm-openai:v0.20.0"),  # a plain int from 0.18.0
    (["--load-format", "zzz"], "vllm/vllm-openai:v0.11.0"),  # ``str | LoadFormats``: a metavar, no choices
    (["--quantization", "awq"], "vllm/vllm-openai:v0.11.0"),
]

#: Every (args, image, GPUs) this module checks, in one `check` run (``checked``).
CASES = [
    (tuple(GRAPH_OOM), "vllm/vllm-openai:v0.11.0", "2"),
    *((tuple([*GRAPH_OOM, *extra]), image, "2") for extra, image in GRAPHS_OFF),
    *((("--max-model-len", "8192", *extra), image, "1") for extra, image, _ in REFUSED),
    (("--max-model-len", "8192", "--quantization", "nonsense"), "vllm/vllm-openai:v0.11.0", "1"),
    *((("--max-model-len", "8192", *extra), image, "1") for extra, image in TAKEN),
]


def _workload(i: int, args: tuple[str, ...], image: str, gpus: str, tmp_path: Path) -> dict:
    doc = yaml.safe_load(Path(manifest(tmp_path, [], gpu="NVIDIA-L4", image=image)).read_text())
    doc["metadata"]["name"] = f"case-{i}"
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["--model", LLAMA, *args]
    container["resources"]["limits"]["nvidia.com/gpu"] = gpus
    return doc


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[tuple[str, ...], str, str], dict]:
    """Every case of this module as one Deployment of one file, judged by one real `check -o json` run (one CLI
    start instead of one per case: the suite's time budget), keyed by (args, image, GPUs)."""
    tmp = tmp_path_factory.mktemp("compilation")
    keys = list(dict.fromkeys(CASES))
    docs = [_workload(i, *key, tmp) for i, key in enumerate(keys)]
    path = tmp / "all.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    items = json.loads(got.stdout)["items"]
    assert len(items) == len(keys), got.stdout
    by_name = {item["name"]: item for item in items}
    return {key: by_name[f"case-{i}"] for i, key in enumerate(keys)}


def _check(checked: dict, args: list[str], image: str = "vllm/vllm-openai:v0.11.0", gpus: str = "1") -> dict:
    return checked[(tuple(args), image, gpus)]


def _text(item: dict) -> str:
    return "\n".join(f"{f['check']} [{f['severity']}]: {f['reason']} | fix: {f['fix']}" for f in item["findings"])


def test_the_default_compilation_settings_die_capturing_graphs(checked: dict) -> None:
    item = _check(checked, GRAPH_OOM, gpus="2")
    assert item["prediction"]["outcome"] == "cudagraph_capture_oom", _text(item)
    assert "--cuda-graph-sizes" in _text(item)


@pytest.mark.parametrize(("extra", "image"), GRAPHS_OFF)
def test_graphs_off_or_capped_by_the_compilation_config_are_honoured(
    checked: dict, extra: list[str], image: str
) -> None:
    item = _check(checked, [*GRAPH_OOM, *extra], image, gpus="2")
    assert item["prediction"]["outcome"] != "cudagraph_capture_oom", _text(item)
    assert "--cuda-graph-sizes" not in _text(item) and "--max-cudagraph-capture-size" not in _text(item)


@pytest.mark.parametrize(("extra", "image", "said"), REFUSED)
def test_values_argparse_refuses_are_argument_refused(
    checked: dict, extra: list[str], image: str, said: str
) -> None:
    item = _check(checked, ["--max-model-len", "8192", *extra], image)
    assert item["prediction"]["outcome"] == "argument_refused", _text(item)
    assert said in _text(item)
    assert "cannot predict" not in _text(item)


def test_a_refused_quantization_is_not_kept_by_the_plan(checked: dict) -> None:
    item = _check(checked, ["--max-model-len", "8192", "--quantization", "nonsense"])
    assert "unset --quantization" in _text(item)


@pytest.mark.parametrize(("extra", "image"), TAKEN)
def test_values_the_release_s_argparse_takes_are_not_refused(
    checked: dict, extra: list[str], image: str
) -> None:
    item = _check(checked, ["--max-model-len", "8192", *extra], image)
    assert item["prediction"]["outcome"] != "argument_refused", _text(item)
