"""Post and pre-release builds are labelled, and sized, by PEP 440 order and by what was read.

A hostile review found the label inconsistent: ``0.6.4.dev0`` and ``0.34.0.dev0`` were "modelled on the 0.6.4 / 0.34.0
release" although a dev build comes before its release (0.6.4.dev0 < 0.6.4), and 0.6.4.dev0 was allowed
``--hf-overrides``, which 0.6.4 added. A pre-release now runs the rules of the release before it, labelled
extrapolated, with none of its release's gates. A patch (``0.10.1.1``, ``0.6.3.post1``) keeps its release's rules
under either spelling, and is labelled modelled only where that patch was read (0.10.1.1's source is cited throughout,
0.6.3.post1's nowhere); 0.6.6.post1, read, was labelled extrapolated.
"""

from __future__ import annotations

import json

import pytest

from vllm_remedy.commands import _hf_flags
from vllm_remedy.errors import UserError
from vllm_remedy.sim.vllm_pod.timeline import flag_extrapolated
from vllm_remedy.vllm.versions import parse_version, rules


@pytest.mark.parametrize(("version", "label", "provenance"), [
    ("0.10.1", "0.10.1", "modelled"),
    ("0.10.1.1", "0.10.1.1", "modelled"),  # vLLM's patch of 0.10.1, its source read (arg_utils, gpu_worker, envs)
    ("0.6.3.post1", "0.6.3.post1 (rules: extrapolated from 0.6.3)", "extrapolated from 0.6.3"),  # never read
    ("0.6.6.post1", "0.6.6.post1", "modelled"),  # worker.py and utils.py read at 0.6.6.post1
    ("0.6.4.dev0", "0.6.4.dev0 (rules: extrapolated from 0.6.3)", "extrapolated from 0.6.3"),
    ("0.34.0.dev0", "0.34.0.dev0 (rules: extrapolated from 0.33.0)", "extrapolated from 0.33.0"),
    ("0.26.1rc1", "0.26.1rc1 (rules: extrapolated from 0.26.0)", "extrapolated from 0.26.0"),
    ("0.35.0", "0.35.0 (rules: extrapolated from 0.34.0)", "extrapolated from 0.34.0"),
    ("0.4.2", "0.4.2 (rules: extrapolated from 0.5.5)", "extrapolated from 0.5.5"),
    ("0.8.5.post1.dev3", "0.8.5.post1.dev3 (rules: extrapolated from 0.8.5)", "extrapolated from 0.8.5"),
    ("0.10.1.1rc1", "0.10.1.1rc1 (rules: extrapolated from 0.10.1)", "extrapolated from 0.10.1")])
def test_label_and_provenance(version, label, provenance):
    r = rules(version)
    assert (r.label, r.provenance, r.extrapolated) == (label, provenance, provenance != "modelled")


@pytest.mark.parametrize(("post", "fourth", "provenance"), [
    ("0.6.3.post1", "0.6.3.1", "extrapolated from 0.6.3"),  # neither spelling of a 0.6.3 patch was read
    ("0.6.4.post1", "0.10.1.1", "modelled"),  # a patch read, in either spelling
    ("0.6.4.post2", "0.10.1.2", "extrapolated from {}")])  # the next one, never read: from the patch read
def test_a_patch_is_labelled_alike_under_either_spelling(post, fourth, provenance):
    """A patch carries its release's rules; whether it was read decides the label, not how its number is spelt."""
    assert rules(post) == rules(post.split(".post")[0]) and rules(fourth) == rules(fourth.rsplit(".", 1)[0])
    assert rules(post).provenance == provenance.format("0.6.4.post1")
    assert rules(fourth).provenance == provenance.format("0.10.1.1")


@pytest.mark.parametrize(("build", "release", "before"), [
    ("0.6.4.dev0", (0, 6, 4), (0, 6, 3)), ("0.34.0.dev0", (0, 34, 0), (0, 33, 0)),
    ("0.34.0rc2", (0, 34, 0), (0, 33, 0)),
    ("0.26.1rc1", (0, 26, 1), (0, 26, 0)), ("0.26.1rc1.dev156+g0eec856cc", (0, 26, 1), (0, 26, 0)),
    ("0.9.0rc1", (0, 9, 0), (0, 8, 5)), ("1.0.0rc1", (1, 0, 0), (0, 34, 0))])
def test_a_pre_release_runs_the_rules_of_the_release_before_it(build, release, before):
    """PEP 440: 0.6.4.dev0 < 0.6.4rc1 < 0.6.4 < 0.6.4.post1; a post release keeps its release's tuple."""
    assert parse_version(build) == before < release == parse_version(".".join(map(str, release)))
    assert rules(build) == rules(".".join(map(str, before)))


def test_a_dev_build_gets_none_of_its_releases_gates():
    dev, release = rules("0.34.0.dev0"), rules("0.34.0")
    assert (release.kv_sized_after_warmup, release.default_gpu_memory_utilization) == (True, 1.0)
    assert (dev.kv_sized_after_warmup, dev.default_gpu_memory_utilization, dev.free_memory_check) == (False, 0.92, True)
    assert (rules("0.6.4.dev0").budget, rules("0.6.4").budget) == ("increase", "absolute")  # 0.6.3's V0 budget
    with pytest.raises(UserError, match=r"vLLM 0\.6\.4\.dev0 \(rules: extrapolated from 0\.6\.3\) has no such flag"):
        _hf_flags.refusal({"hf-overrides": '{"max_position_embeddings": 16384}'}, "0.6.4.dev0")
    _hf_flags.refusal({"hf-overrides": '{"max_position_embeddings": 16384}'}, "0.6.4")  # the release has it


def test_the_rehearsal_log_calls_a_pre_release_one():
    text = "INFO 01-01 00:00:00 api_server.py:1] vLLM API server version 0.6.4.dev0\nINFO non-default args: {}\n"
    note = flag_extrapolated("0.6.4.dev0", text).splitlines()[1]
    assert note.endswith("vLLM 0.6.4.dev0 is a pre-release, which comes before its release: memory rules "
                         "extrapolated from 0.6.3"), note


def test_estimate_json_says_a_dev_build_is_extrapolated_from_the_release_before(cli):
    got = cli("estimate", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "NVIDIA-L4", "--vllm-version", "0.34.0.dev0",
              "-o", "json")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert (out["vllm_version"], out["vllm_version_label"], out["rules"]) == (
        "0.34.0.dev0", "0.34.0.dev0 (rules: extrapolated from 0.33.0)", "extrapolated from 0.33.0")
