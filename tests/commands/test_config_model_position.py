"""``vllm serve <flags> MODEL --config FILE``: vLLM splices the file in taking the first word after ``serve`` as the
model (``_pull_args_from_config``), so with the model elsewhere 0.8.3-0.34.0 raise "No model specified!" unless the
file names it, and 0.6.3-0.8.0 raise "No model_tag specified!" for ``--config`` first or hand a first flag the file's
``--flag`` as its value (argparse: "expected one argument"). `check` used to predict a start for all of them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import run_cli

GOOD = Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook" / "good-rev14.yaml"
POLICY = "policies/llama-8b.yaml"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
CFG = "/etc/vllm/cfg.yaml"
FILE = "gpu-memory-utilization: 0.9\nmax-num-seqs: 64\n"
LATE = ["--max-model-len", "16384", LLAMA, "--config", CFG]
MODULE = ["--model", LLAMA, "--max-model-len", "16384", "--config", CFG]
CASES = {  # name: (release, args, the file's text or None for no ConfigMap, what check must say or None)
    "late-0-34-0": ("0.34.0", LATE, FILE, "No model specified! Please specify model either as a positional"),
    "late-0-12-0": ("0.12.0", LATE, FILE, "No model specified!"),
    "late-0-9-2": ("0.9.2", LATE, FILE, "No model specified!"),
    "late-0-8-3": ("0.8.3", LATE, FILE, "No model specified!"),
    "model-in-file-0-34-0": ("0.34.0", LATE, FILE + f"model: {LLAMA}\n", None),
    "first-0-34-0": ("0.34.0", [LLAMA, "--max-model-len", "16384", "--config", CFG], FILE, None),
    "hoisted-0-34-0": ("0.34.0", ["--max-model-len", "16384", "--model", LLAMA, "--config", CFG], FILE, None),
    "config-first-0-7-3": ("0.7.3", ["--config", CFG, LLAMA, "--max-model-len", "16384"], FILE,
                           "No model_tag specified! Please check your command-line arguments."),
    "config-first-unread-0-7-3": ("0.7.3", ["--config", CFG, LLAMA, "--max-model-len", "16384"], None,
                                  "No model_tag specified!"),
    "splice-0-7-3": ("0.7.3", LATE, FILE, "argument --max-model-len: expected one argument"),
    # the image's default api_server module (to 0.11.0): the file's flags after its first word, to 0.10.1
    "module-0-9-2": ("0.9.2", MODULE, FILE, "argument --model: expected one argument"),
    "module-0-10-1": ("0.10.1", MODULE, FILE, "argument --model: expected one argument"),
    "module-0-10-2": ("0.10.2", MODULE, FILE, None),
}


def _docs(name: str, release: str, args: list[str], text: str | None) -> list[dict]:
    dep = yaml.safe_load(GOOD.read_text())
    dep["metadata"]["name"] = name
    spec = dep["spec"]["template"]["spec"]
    container = spec["containers"][0]
    container["image"], container["args"] = f"vllm/vllm-openai:v{release}", args
    if args is MODULE:
        container.pop("command", None)  # the image's entrypoint: python3 -m vllm.entrypoints.openai.api_server
    if text is None:
        return [dep]
    spec.setdefault("volumes", []).append({"name": "vcfg", "configMap": {"name": f"vcfg-{name}"}})
    container.setdefault("volumeMounts", []).append({"name": "vcfg", "mountPath": "/etc/vllm"})
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"vcfg-{name}", "namespace": "llm"},
             "data": {"cfg.yaml": text}}, dep]


def test_check_refuses_the_model_off_the_first_word_as_vllm_does(tmp_path: Path) -> None:
    docs = [d for name, (release, args, text, _) in CASES.items() for d in _docs(name, release, args, text)]
    items = _judge(docs, tmp_path)
    for name, (*_, said) in CASES.items():
        item = items[name]
        flags = [f for f in item["findings"] if f["check"] == "flags" and f["severity"] == "error"]
        if said is None:
            assert item["prediction"]["outcome"] != "argument_refused" and not flags, (name, item)
            continue
        assert item["prediction"]["outcome"] == "argument_refused", (name, item["prediction"])
        assert any(said in f["reason"] for f in flags), (name, flags)
        exit_code = 2 if said.startswith("argument ") else 1
        assert any(f"(exit {exit_code}: the pod never starts)" in f["reason"] for f in flags), (name, flags)
        fix = f"--model={LLAMA} as one word" if name.startswith("module") else f"vllm serve {LLAMA} ... --config {CFG}"
        assert any(fix in f["fix"] for f in flags), (name, flags)


def test_an_unread_file_after_a_flag_cannot_be_predicted(tmp_path: Path) -> None:
    """0.34.0 refuses it unless the file names the model, which an unread file might: unknown, not a refusal."""
    items = _judge(_docs("late-unread", "0.34.0", LATE, None), tmp_path)
    item = items["late-unread"]
    assert item["prediction"]["outcome"] != "argument_refused", item
    assert any(f["severity"] == "unknown" and f"--config {CFG}" in f["reason"] for f in item["findings"]), item


def _judge(docs: list[dict], tmp: Path) -> dict[str, dict]:
    """One real `check -o json` run over the Deployments and their ConfigMaps (``check_batch.judge`` counts every
    document as a workload): each workload's JSON item by name."""
    path = tmp / "all.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    got = run_cli("check", "-f", str(path), "--policy", POLICY, "-o", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return {item["name"]: item for item in json.loads(got.stdout)["items"]}


def test_config_equals_form_is_ignored_as_vllm_ignores_it(tmp_path: Path) -> None:
    """``--config=FILE`` is no ``--config`` word: vLLM does not splice the file (utils/argparse_utils.py@0.34.0 l.371)
    and its parser's ``--config`` option stores a path nothing reads, so the file's length is not vLLM's; and an
    unread file there is nothing to predict around. `check` read the file (and called an unread one unknown)."""
    args = [LLAMA, "--gpu-memory-utilization", "0.9", f"--config={CFG}"]
    docs = _docs("equals-read", "0.34.0", args, "max-model-len: 8192\n") + _docs("equals-unread", "0.34.0", args, None)
    items = _judge(docs, tmp_path)
    assert items["equals-read"]["prediction"]["estimate"]["max_model_len"] != 8192, items["equals-read"]["prediction"]
    assert not any(f"--config {CFG}" in f["reason"] for f in items["equals-unread"]["findings"]), items["equals-unread"]
    assert items["equals-unread"]["prediction"]["estimate"] is not None, items["equals-unread"]["prediction"]
