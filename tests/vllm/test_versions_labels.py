"""Every output says how a version's memory rules were made: read from that release, extrapolated, or unknown.

A review found three ways a version was printed as modelled when it was not: an image naming no vLLM version
(``:latest``, untagged, a digest, ``:nightly``, a tag that numbers another product) got the newest release's
rules and `check -o json` said ``"rules": "modelled"``; ``0.34.1`` and ``0.33.99`` counted as modelled although no
release past 0.34.0, and no 0.33 patch, was read; ``0.35.0rc1`` was printed as ``0.35.0`` and `diagnose` showed a
logged 0.35.0 with no word on its rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vllm_remedy.remedies.predict import predict_template, rules_note
from vllm_remedy.vllm.versions import rules, version_from_image

UNKNOWN = "unknown version: rules of the newest release, 0.34.0"
MANIFEST = Path("tests/data/manifests/runbook/bad-rev15.yaml")
LOG = Path("tests/data/logs/v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp1pp1dp1_16384.log")
NAMELESS = ["vllm/vllm-openai:latest", "vllm/vllm-openai", "vllm/vllm-openai:nightly",
            "vllm/vllm-openai@sha256:" + "0123456789abcdef" * 4, "lmcache/vllm-openai:v0.3.7"]


def test_an_unknown_version_says_so_and_whose_rules_it_gets():
    r = rules(None)
    assert (r.label, r.provenance, r.extrapolated) == ("unknown (rules of the newest release, 0.34.0)", UNKNOWN, False)
    assert rules_note(None) == UNKNOWN


@pytest.mark.parametrize(("version", "read_from"), [
    ("0.34.1", "0.34.0"), ("0.33.99", "0.33.0"), ("0.33.1", "0.33.0"), ("0.27.2", "0.27.1"), ("0.21.3", "0.21.0"),
    ("0.35.0", "0.34.0"), ("0.5.0", "0.5.5"), ("0.8.9", "0.8.5"), ("0.34.0.1", "0.34.0"),
    ("0.10.1.2", "0.10.1.1")])
def test_a_release_whose_source_was_not_read_is_extrapolated_from_the_nearest_one_read(version, read_from):
    """Past NEWEST_MODELLED in the whole (major, minor, patch) tuple, or a patch past the last one read of its minor."""
    r = rules(version)
    assert r.extrapolated and r.provenance == f"extrapolated from {read_from}"
    assert r.label == f"{version} (rules: extrapolated from {read_from})"
    assert rules_note(version) == f"vLLM {version}: rules extrapolated from {read_from}"


@pytest.mark.parametrize("version", ["0.34.0", "0.33.0", "0.27.1", "0.25.1", "0.21.0", "0.19.1", "0.10.1.1",
                                     "0.8.5.post1", "0.6.4.post1", "0.6.6", "0.11.0+torch271"])
def test_a_release_that_was_read_is_modelled_and_printed_as_given(version):
    r = rules(version)
    assert (r.label, r.provenance, r.extrapolated, rules_note(version)) == (version, "modelled", False, "")


@pytest.mark.parametrize(("version", "provenance"), [
    ("0.34.0.post1", "extrapolated from 0.34.0"), ("0.27.1.post1", "extrapolated from 0.27.1"),
    ("0.8.5.post2", "extrapolated from 0.8.5.post1"), ("0.33.1.post1", "extrapolated from 0.33.0"),
    ("0.34.0rc2", "extrapolated from 0.33.0"), ("0.34.0.dev3", "extrapolated from 0.33.0"),
    ("0.26.1rc1.dev156+g0eec856cc", "extrapolated from 0.26.0"), ("0.27.2rc1", "extrapolated from 0.27.1")])
def test_a_post_release_not_read_is_extrapolated_and_a_pre_release_says_whose_rules_it_gets(version, provenance):
    """Neither was read: a post release past the ones whose logs the rules cite (READ_POST) differs from the release
    it follows by whatever it fixed; an rc or dev build precedes its release (PEP 440), so it gets the rules of the
    release before it, extrapolated (tests/vllm/test_version_labels.py)."""
    r = rules(version)
    assert (r.provenance, r.label) == (provenance, f"{version} (rules: {provenance})")
    assert rules_note(version) == f"vLLM {version}: rules {provenance}"
    assert r == rules(".".join(map(str, r.version)))  # sized by its release's tuple


@pytest.mark.parametrize(("typed", "shown"), [("0.35.0rc1", "0.35.0rc1"), ("v0.35.1", "0.35.1"),
                                              ("0.35.0.dev3", "0.35.0.dev3")])
def test_a_version_is_shown_as_typed_and_sized_by_its_parsed_release(typed, shown):
    assert rules(typed).label == f"{shown} (rules: extrapolated from 0.34.0)"
    # the same rules, by the tuple: an rc or dev build of 0.35.0 runs the release before it
    assert rules(typed) == rules("0.35.1" if typed == "v0.35.1" else "0.34.0")


@pytest.mark.parametrize("image", NAMELESS)
def test_check_json_says_an_image_naming_no_version_is_not_modelled(cli, tmp_path, image):
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(MANIFEST.read_text().replace("vllm/vllm-openai:v0.8.5", image))
    assert version_from_image(image) is None
    got = cli("check", "-f", str(manifest), "--policy", "policies/llama-8b.yaml", "-o", "json")
    assert got.returncode == 1, got.stderr
    item = json.loads(got.stdout)["items"][0]
    assert item["prediction"]["rules"] == UNKNOWN, item["prediction"]
    assert f"image {image} names no vLLM version; the newest rules are used" in item["notes"], item["notes"]


def test_check_json_says_a_patch_past_the_newest_is_extrapolated(cli, tmp_path):
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(MANIFEST.read_text().replace("vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.34.1"))
    got = cli("check", "-f", str(manifest), "--policy", "policies/llama-8b.yaml", "-o", "json")
    assert json.loads(got.stdout)["items"][0]["prediction"]["rules"] == "vLLM 0.34.1: rules extrapolated from 0.34.0"


def test_estimate_prints_an_rc_as_typed(cli):
    args = ("estimate", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "NVIDIA-L4", "--vllm-version", "0.35.0rc1")
    human, machine = cli(*args), json.loads(cli(*args, "-o", "json").stdout)
    assert "/ 0.35.0rc1 (rules: extrapolated from 0.34.0)" in human.stdout, human.stdout
    # vllm_version is the version typed (a JSON consumer compares it); the printed label is its own key (review3 L6)
    assert (machine["vllm_version"], machine["vllm_version_label"], machine["rules"]) == (
        "0.35.0rc1", "0.35.0rc1 (rules: extrapolated from 0.34.0)", "extrapolated from 0.34.0")


def test_check_plan_and_drift_show_an_rc_tag_as_tagged(cli, tmp_path):
    """An image tagged v0.35.0rc1 was shown as 0.35.0 by check, plan and drift (estimate showed it as typed)."""
    image = "vllm/vllm-openai:v0.35.0rc1"
    assert version_from_image(image) == "0.35.0rc1"
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(MANIFEST.read_text().replace("vllm/vllm-openai:v0.8.5", image))
    item = json.loads(cli("check", "-f", str(manifest), "--policy", "policies/llama-8b.yaml", "-o", "json").stdout)
    assert item["items"][0]["prediction"]["rules"] == "vLLM 0.35.0rc1: rules extrapolated from 0.34.0"
    plan = cli("plan", "-f", str(manifest)).stdout.splitlines()[0]
    assert plan.endswith(", vLLM 0.35.0rc1 (rules: extrapolated from 0.34.0)"), plan
    template = yaml.safe_load(manifest.read_text())["spec"]["template"]
    assert predict_template(template).rules == "vLLM 0.35.0rc1: rules extrapolated from 0.34.0"  # drift's reading


@pytest.mark.parametrize(("logged", "row", "provenance"), [
    ("0.35.0", "0.35.0 (rules: extrapolated from 0.34.0)", "extrapolated from 0.34.0"),
    ("0.35.0rc1", "0.35.0rc1 (rules: extrapolated from 0.34.0)", "extrapolated from 0.34.0"),
    ("0.19.0", "0.19.0", "modelled")])
def test_diagnose_says_how_the_logged_releases_rules_were_made(cli, tmp_path, logged, row, provenance):
    """The log's defaults (the utilization it leaves out, the engine) are read by the logged release's rules."""
    log = tmp_path / "start.log"
    log.write_text(LOG.read_text().replace("0.19.0", logged))
    human = cli("diagnose", "--log", str(log))
    machine = json.loads(cli("diagnose", "--log", str(log), "-o", "json").stdout)
    assert [line.split(None, 2)[2] for line in human.stdout.splitlines() if "vLLM version" in line] == [row]
    assert (machine["vllm_version"], machine["rules"]) == (logged, provenance)


def test_diagnose_of_a_log_naming_no_version_applies_no_releases_rules(cli):
    got = json.loads(cli("diagnose", "--log", "tests/data/logs/v0.9.1_l40s_free_memory.log", "-o", "json").stdout)
    assert (got["vllm_version"], got["rules"]) == (None, None)


def test_a_fourth_number_never_read_is_extrapolated_typed_or_tagged():
    """0.10.1.1 was read, 0.10.1.2 and 0.34.0.1 were not: they were labelled modelled (third review L1)."""
    assert rules("0.10.1.1").provenance == "modelled"
    assert rules(version_from_image("vllm/vllm-openai:v0.34.0.1")).label == "0.34.0.1 (rules: extrapolated from 0.34.0)"


@pytest.mark.parametrize("version", ["v1.0.0", "1.0.0", "2.3.4"])
def test_a_version_past_0x_is_newer_than_modelled_typed_or_tagged_on_vllms_image(version):
    """Typed and tagged agree (L1), and a version named is not unknown: --vllm-version 1.0.0 and vLLM's own image
    tagged v1.0.0 are a release newer than modelled (identity review 6); another product's 3.0.0 stays unknown."""
    typed, tagged = rules(version), rules(version_from_image(f"vllm/vllm-openai:{version}"))
    shown = version.removeprefix("v")
    assert typed.label == tagged.label == f"{shown} (rules: extrapolated from 0.34.0)"
    assert typed.read_from == tagged.read_from == (0, 34, 0)
