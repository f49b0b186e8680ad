"""Where the model goes on vLLM's command line, by release, through the real `vllm-remedy check` (one batched run):

* the api_server module (an args-only vllm-openai image to v0.11.0) has no positional before 0.10.0
  (entrypoints/openai/cli_args.py@0.5.5-0.9.2; ``model_tag`` from @0.10.0 l.214): a model given as the first word is
  ``unrecognized arguments`` (exit 2); the tools judged only 0.8.5 and said "names no model" elsewhere;
* ``vllm serve --model M`` raises ValueError (exit 1) in vLLM's CLI: before argparse on the exact word ``--model`` from
  0.8.3 to 0.11.0 (``--model=M`` passes), after parsing to 0.8.0 (utils.py@0.8.3 l.1245, utils/__init__.py@0.11.0
  l.1859, entrypoints/cli/serve.py@0.8.0 l.26); the tools passed it;
* ``vllm serve``'s model tag is required to 0.8.0 (usage ``vllm serve <model_tag> [options]``): argparse refuses a
  command without it (exit 2); the tools could not predict it."""

from __future__ import annotations

from pathlib import Path

from fixtures.check_batch import judge, l40s_deployment
from vllm_remedy.remedies.predict import predict_template

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
PRE = ("ValueError: With `vllm serve`, you should provide the model as a positional argument or in a config file "
       "instead of via the `--model` option.")
POST = "ValueError: With `vllm serve`, you should provide the model as a positional argument instead of via the " \
       "`--model` option."
REQUIRED = "the following arguments are required: model_tag"


def _dep(name: str, tag: str, args: list[str], command: list[str] | None = None) -> dict:
    return l40s_deployment(name, f"vllm/vllm-openai:{tag}", args, command)


SERVE = ["vllm", "serve"]
CASES = {  # name: (deployment, the refusal check must report, or None: no argparse/CLI refusal)
    "module-0-9-2": (_dep("module-0-9-2", "v0.9.2", [LLAMA, "--max-model-len", "8192"]),
                     f"unrecognized arguments: {LLAMA}"),
    "module-0-6-6": (_dep("module-0-6-6", "v0.6.6", [LLAMA, "--max-model-len", "8192"]),
                     f"unrecognized arguments: {LLAMA}"),
    "module-0-10-0": (_dep("module-0-10-0", "v0.10.0", ["--model", LLAMA, "x", "y", "--max-model-len",
                                                       "8192"]),
                      "unrecognized arguments: y"),  # one model_tag from 0.10.0: only a second word is left over
    "flag-0-11-0": (_dep("flag-0-11-0", "v0.11.0", ["--model", LLAMA, "--max-model-len", "8192"], SERVE), PRE),
    "flag-0-8-3": (_dep("flag-0-8-3", "v0.8.3", ["--max-model-len", "8192", "--model", LLAMA], SERVE), PRE),
    "flag-eq-0-11-0": (_dep("flag-eq-0-11-0", "v0.11.0", [f"--model={LLAMA}", "--max-model-len", "8192"], SERVE),
                       None),
    "flag-0-11-1": (_dep("flag-0-11-1", "v0.11.1", ["--model", LLAMA, "--max-model-len", "8192"], SERVE), None),
    "flag-0-8-0": (_dep("flag-0-8-0", "v0.8.0", [LLAMA, "--model", LLAMA, "--max-model-len", "8192"], SERVE), POST),
    "flag-eq-0-7-3": (_dep("flag-eq-0-7-3", "v0.7.3", [LLAMA, f"--model={LLAMA}", "--max-model-len", "8192"],
                           SERVE), POST),
    "default-0-7-3": (_dep("default-0-7-3", "v0.7.3", [LLAMA, "--model", "facebook/opt-125m", "--max-model-len",
                                                       "2048"], SERVE), None),
    "no-tag-0-7-3": (_dep("no-tag-0-7-3", "v0.7.3", ["--model", LLAMA, "--max-model-len", "8192"], SERVE), REQUIRED),
    "no-tag-0-8-0": (_dep("no-tag-0-8-0", "v0.8.0", ["--max-model-len", "8192"], SERVE), REQUIRED),
    "tag-0-7-3": (_dep("tag-0-7-3", "v0.7.3", [LLAMA, "--max-model-len", "8192"], SERVE), None),
    "no-tag-0-8-3": (_dep("no-tag-0-8-3", "v0.8.3", [f"--model={LLAMA}", "--max-model-len", "8192"], SERVE), None),
}


def test_check_reads_the_model_tag_as_each_release_does(tmp_path: Path) -> None:
    items, text = judge([doc for doc, _ in CASES.values()], tmp_path, text=True)
    for name, (_doc, said) in CASES.items():
        item = items[name]
        flags = [f for f in item["findings"] if f["check"] == "flags" and f["severity"] == "error"]
        if said is None:
            assert not flags, (name, item["findings"])
            continue
        assert item["status"] == "fail" and item["prediction"]["outcome"] == "argument_refused", (name, item)
        assert any(said in f["reason"] for f in flags), (name, item["findings"])
        exit_code = 1 if said.startswith("ValueError") else 2
        assert any(f"(exit {exit_code}: the pod never starts)" in f["reason"] for f in flags), (name, flags)
        assert f"exit {3 - exit_code}:" not in text[name], (name, text[name])
    # the CLI's refusals say where the model goes; no step removes --model (that names no model at all)
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct ...) or write --model=" in text["flag-0-11-0"]
    assert "and drop --model" in text["flag-0-8-0"]
    assert "usage: vllm serve <model_tag> [options]" in text["no-tag-0-7-3"]
    for name in ("flag-0-11-0", "flag-0-8-0", "no-tag-0-7-3"):
        assert items[name]["fix"] is None or "model" not in items[name]["fix"]["unset"], items[name]["fix"]


def test_the_deploys_prediction_says_the_refusal_before_any_model() -> None:
    """``predict_template`` (every deploy's prediction line): argparse and the CLI stop before a model is read, so a
    command whose model the parser has no place for, or that lacks the required tag, is refused, not unknown."""
    for name in ("module-0-9-2", "no-tag-0-8-0", "flag-0-11-0", "flag-0-8-0"):
        doc, said = CASES[name]
        got = predict_template(doc["spec"]["template"])
        assert (got.outcome, got.gpu) == ("argument_refused", "NVIDIA-L40S") and said in got.note, (name, got)
