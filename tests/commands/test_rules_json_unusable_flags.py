"""JSON ``rules`` names an image's rules whether or not its flags gave an estimate: with ``--max-model-len 0`` a
v0.35.0 or ``:latest`` image said "modelled" in ``check -o json`` (and in the deploys' and drift's predictions) while
the human view said "extrapolated"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vllm_remedy.remedies.predict import predict_template

GOOD = Path(__file__).resolve().parents[1] / "data" / "manifests" / "runbook" / "good-rev14.yaml"
CASES = [("vllm/vllm-openai:v0.35.0", "vLLM 0.35.0: rules extrapolated from 0.34.0"),
         ("vllm/vllm-openai:latest", "unknown version: rules of the newest release, 0.34.0")]


def _deployment(image: str) -> dict:
    dep = yaml.safe_load(GOOD.read_text())
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["image"] = image
    args = container["args"]
    args[args.index("--max-model-len") + 1] = "0"
    return dep


@pytest.mark.parametrize(("image", "said"), CASES)
def test_check_json_says_the_rules_without_an_estimate(cli, tmp_path, image, said):
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump(_deployment(image)))
    got = cli("check", "-f", str(path), "-o", "json")
    prediction = json.loads(got.stdout)["items"][0]["prediction"]
    assert (prediction["estimate"], prediction["rules"]) == (None, said), prediction


@pytest.mark.parametrize(("image", "said"), CASES)
def test_the_deploys_prediction_says_them_too(image, said):
    got = predict_template(_deployment(image)["spec"]["template"])
    assert got.estimate is None and got.to_json()["rules"] == said, got
    assert predict_template(_deployment("vllm/vllm-openai:v0.8.5")["spec"]["template"]).to_json()["rules"] == \
        "modelled"
