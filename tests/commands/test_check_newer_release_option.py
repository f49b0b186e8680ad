"""``check`` and ``plan -f`` on an image newer than the newest release read with an option no release read had
(hostile review 14, F15: check passed ``--foo-bar 1`` on vllm/vllm-openai:v0.35.0 silently while the rehearsal pod
refused it): both say it was not judged, as a note (check's warnings: exit 0 when nothing else fails, in text, JSON
and JUnit), and plan keeps the option in its flags. An option a read release dropped is still refused there, and
the newest read release itself refuses the unknown one."""

from __future__ import annotations

import json

from fixtures.vllm_deployment import manifest

NOTE = ("not judged: --foo-bar is not an option of vLLM 0.34.0, the newest release read; 0.35.0 may accept it (a "
        "rehearsal pod starts with it, its effect not modelled)")
ARGS = ["--max-model-len", "16384", "--gpu-memory-utilization", "0.9", "--foo-bar", "1"]


def test_check_notes_the_option_and_passes(cli, tmp_path):
    path = manifest(tmp_path, ARGS, image="vllm/vllm-openai:v0.35.0")
    got = cli("check", "-f", path)
    assert got.returncode == 0, got.stdout + got.stderr
    assert f"  note: {NOTE}" in got.stdout.splitlines(), got.stdout
    (item,) = json.loads(cli("check", "-f", path, "-o", "json").stdout)["items"]
    assert item["status"] == "pass" and NOTE in item["notes"], item
    assert NOTE in cli("check", "-f", path, "-o", "junit").stdout


def test_check_still_refuses_a_dropped_option_there_and_the_unknown_one_on_0_34(cli, tmp_path):
    dropped = cli("check", "-f", manifest(tmp_path, [*ARGS[:4], "--swap-space", "4"], image="vllm/vllm-openai:v0.35.0"))
    assert dropped.returncode == 1 and "refuses --swap-space at argument parsing" in dropped.stdout, dropped.stdout
    read = cli("check", "-f", manifest(tmp_path, ARGS, image="vllm/vllm-openai:v0.34.0"))
    assert read.returncode == 1 and "refuses --foo-bar at argument parsing" in read.stdout, read.stdout
    assert "not judged" not in read.stdout


def test_plan_notes_it_and_keeps_it(cli, tmp_path):
    path = manifest(tmp_path, ARGS, image="vllm/vllm-openai:v0.35.0")
    got = cli("plan", "-f", path, "-o", "json")
    assert got.returncode == 0, got.stderr
    plan = json.loads(got.stdout)
    assert NOTE in plan["notes"] and plan["flags"]["foo-bar"] == "1", plan
    assert f"note: {NOTE}" in cli("plan", "-f", path).stdout.splitlines()
