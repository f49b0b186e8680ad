"""Dotted ``--hf-overrides.KEY VALUE`` as each release's FlexibleArgumentParser reads it (hostile review 2026-12-06):
``check`` used to size the model without it. From 0.9.0 the dotted keys are folded into one JSON dict appended after
every argument (utils.py@0.9.0 ``dict_args``), so ``check`` sizes exactly what the same dict given as JSON sizes, and
that dict replaces a plain ``--hf-overrides JSON`` (argparse keeps the last value); 0.9.0 respells the key itself
(``num-hidden-layers``) and keeps the value as text, 0.9.2 on respells only the flag and JSON-decodes the value
(utils/__init__.py@0.9.2), 0.20.0 on reads ``256K`` as ``human_readable_int``. Up to 0.8.5 (utils.py@0.8.5) argparse
refuses the dotted option as unknown, in its respelled form."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from fixtures.check_batch import judge
from fixtures.sim_world import l40s_pod_cluster
from fixtures.vllm_deployment import LLAMA, manifest
from vllm_remedy.remedies.predict import predict_template
from vllm_remedy.sim.store import ApiError

BASE = ("--gpu-memory-utilization", "0.9", "--max-num-seqs", "64", "--max-model-len", "16384")
LONG = ("--gpu-memory-utilization", "0.9", "--max-num-seqs", "64", "--max-model-len", "150000")
HALF_JSON = ("--hf-overrides", '{"num_hidden_layers": 16}')
HALF_DOTTED = ("--hf-overrides.num_hidden_layers", "16")
BOTH_JSON = ("--hf-overrides", '{"num_hidden_layers": 16, "max_position_embeddings": 262144}')
BOTH_DOTTED = ("--hf-overrides.num_hidden_layers", "16", "--hf-overrides.max_position_embeddings=262144")
#: a plain JSON first, a dotted key after: the dotted dict, appended last, replaces the JSON (no merge)
JSON_THEN_DOTTED = ("--hf-overrides", '{"max_position_embeddings": 262144}', *HALF_DOTTED)

#: (name, args, release, the same start spelled as vLLM receives it, or None when argparse refuses it)
PAIRS = [
    ("first-decoded", (*BASE, *HALF_DOTTED), "v0.9.2", (*BASE, *HALF_JSON)),
    ("first-folded", (*BASE, *HALF_DOTTED), "v0.9.0", (*BASE, "--hf-overrides", '{"num-hidden-layers": "16"}')),
    ("two-merged", (*LONG, *BOTH_DOTTED), "v0.10.2", (*LONG, *BOTH_JSON)),
    ("json-replaced", (*LONG, *JSON_THEN_DOTTED), "v0.10.2", (*LONG, *HALF_JSON)),
    ("human-int", (*LONG, "--hf-overrides.max_position_embeddings", "256K"), "v0.20.0",
     (*LONG, "--hf-overrides", '{"max_position_embeddings": 262144}')),
]
#: (name, args, release, argparse's words): the last release without the folding refuses the option as unknown
REFUSED = [
    ("refused-spaced", (*BASE, *HALF_DOTTED), "v0.8.5", "unrecognized arguments: --hf-overrides.num-hidden-layers 16"),
    ("refused-attached", (*BASE, "--hf-overrides.max_position_embeddings=4096"), "v0.8.5",
     "unrecognized arguments: --hf-overrides.max-position-embeddings=4096"),
]
CASES = [*((f"{n}-dotted", a, t) for n, a, t, _ in PAIRS), *((f"{n}-json", j, t) for n, _, t, j in PAIRS),
         *((n, a, t) for n, a, t, _ in REFUSED), ("plain-0.9.0", BASE, "v0.9.0"),
         ("folded-length", (*BASE, "--hf-overrides.max_position_embeddings", "4096"), "v0.9.0")]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every case as one Deployment of one file, judged by one real `check -o json` run, by case name."""
    tmp = tmp_path_factory.mktemp("hf-dotted")
    docs = []
    for name, args, tag in CASES:
        (tmp / name).mkdir()
        doc = yaml.safe_load(Path(manifest(tmp / name, list(args), image=f"vllm/vllm-openai:{tag}",
                                           model=LLAMA)).read_text())
        doc["metadata"]["name"] = name
        docs.append(doc)
    items, _ = judge(docs, tmp)
    return items


def _said(item: dict) -> str:
    return "\n".join(f"{f['check']} [{f['severity']}]: {f['reason']}" for f in item["findings"]) + str(item)


@pytest.mark.parametrize("name", [p[0] for p in PAIRS])
def test_dotted_keys_are_sized_as_the_json_the_release_builds(checked: dict, name: str) -> None:
    dotted, spelled = checked[f"{name}-dotted"], checked[f"{name}-json"]
    assert dotted["prediction"] == spelled["prediction"], (_said(dotted), _said(spelled))
    assert dotted["prediction"]["outcome"] != "argument_refused", _said(dotted)


def test_the_decoded_key_halves_the_layers(checked: dict) -> None:
    """Not the plain config: 0.9.2 sets num_hidden_layers to the int 16 (twice the concurrency of 32 layers)."""
    estimate = checked["first-decoded-dotted"]["prediction"]["estimate"]
    assert estimate is not None and estimate["max_concurrency"] > 30, _said(checked["first-decoded-dotted"])


@pytest.mark.parametrize("name", ["first-folded-dotted", "folded-length"])
def test_0_9_0_respells_the_key_so_no_config_reads_it(checked: dict, name: str) -> None:
    """``config.update`` sets ``num-hidden-layers`` / ``max-position-embeddings``, attributes no reader names
    (config.py@0.9.0 l.519-521): vLLM sizes the config unchanged, and so does ``check`` (hostile 11 #4: it said
    "cannot predict: key(s) max-position-embeddings"); the 4,096 length is not applied, 16,384 is not refused."""
    item, plain = checked[name], checked["plain-0.9.0"]
    assert item["prediction"]["estimate"] is not None, _said(item)
    assert item["prediction"] == plain["prediction"], (_said(item), _said(plain))


def test_a_dotted_key_replaces_the_plain_json(checked: dict) -> None:
    """max_position_embeddings from the JSON is gone: 150,000 exceeds the checkpoint's own 131,072 again."""
    assert "max_len_exceeds_model" in _said(checked["json-replaced-dotted"]), _said(checked["json-replaced-dotted"])
    assert "max_len_exceeds_model" not in _said(checked["two-merged-dotted"]), _said(checked["two-merged-dotted"])


@pytest.mark.parametrize(("name", "words"), [(n, w) for n, _, _, w in REFUSED])
def test_before_0_9_0_argparse_refuses_the_dotted_option(checked: dict, name: str, words: str) -> None:
    item = checked[name]
    assert item["prediction"]["outcome"] == "argument_refused", _said(item)
    assert f'(argparse: "{words}")' in item["prediction"]["note"], _said(item)


@pytest.mark.parametrize("name", [p[0] for p in PAIRS if p[0] != "first-folded"])
def test_the_release_that_decodes_sizes_them(checked: dict, name: str) -> None:
    """Sized, not "cannot predict": equal predictions are the dict's, not two refusals alike."""
    assert checked[f"{name}-dotted"]["prediction"]["estimate"] is not None, _said(checked[f"{name}-dotted"])


@pytest.mark.parametrize("spelled", [("--hf-overrides.max_position_embeddings", "262144"),
                                     ("--hf-overrides", '{"max_position_embeddings": 262144}')])
def test_plan_and_the_deploys_fold_them_as_check_does(tmp_path: Path, spelled: tuple[str, ...]) -> None:
    """``plan -f`` (one real CLI run) and a deploy's prediction of the template size the dotted key as its JSON:
    150,000 tokens fit under the overridden 262,144 (plain, 131,072 refuses them)."""
    path = manifest(tmp_path, [*LONG, *spelled], image="vllm/vllm-openai:v0.10.2", model=LLAMA)
    got = run_cli("plan", "-f", path)
    current = next(line for line in got.stdout.splitlines() if line.startswith("current:"))
    assert current.startswith("current:  fits — KV 199,808 tokens"), got.stdout + got.stderr
    template = yaml.safe_load(Path(path).read_text())["spec"]["template"]
    assert predict_template(template).outcome == "fits"


def test_the_rehearsal_pod_folds_them_too(tmp_path: Path) -> None:
    """The pod's own reading (sim/vllm_pod/hf_config_flags.py): 150,000 tokens start under the dotted 262,144."""
    path = manifest(tmp_path, [*LONG, "--hf-overrides.max_position_embeddings", "262144"],
                    image="vllm/vllm-openai:v0.10.2", model=LLAMA)
    template = yaml.safe_load(Path(path).read_text())["spec"]["template"]
    container = dict(template["spec"]["containers"][0], ports=[{"containerPort": 8000}])
    with l40s_pod_cluster(1) as cluster:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dotted", "namespace": "llm"},
               "spec": {**template["spec"], "containers": [container]}}
        cluster.store.create("pods", pod)

        def log() -> str:
            try:
                return cluster.read_log("llm", "dotted")
            except ApiError:  # the container is still being created
                return ""

        assert cluster.wait_for(lambda: "Application startup complete" in log(), 8), log()[-2000:]
