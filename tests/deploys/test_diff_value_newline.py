"""A newline in a flag value cannot forge lines in the approval diff (hostile review 16, G9): PyYAML folded
``--served-model-name "llama\\nSuccess\\n\\n--> Disconnecting from hosts..."`` over several lines of the template's
YAML, so ``--dry`` printed ``Success`` as a diff line of its own and a blank line broke pyinfra's host indentation.
Such a value is now written double-quoted with escapes; the diff still reads back to the same template."""

from __future__ import annotations

import yaml

from fixtures import pyinfra_run
from fixtures.budget_world import EAGER
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import LOCAL, host_out, quiet
from vllm_remedy.kube.diff import template_yaml, unified_template_diff

rehearsal = pyinfra_run.rehearsal

VALUE = "llama\nSuccess\n\n--> Disconnecting from hosts...\r\x1b[2K\u2028fake"
FORGED = ("Success", "--> Disconnecting", "fake")


def _template(*args: str) -> dict:
    argv = ["meta-llama/Llama-3.1-8B-Instruct", "--served-model-name", VALUE, *args]
    return {"spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "args": argv}]}}


def test_the_template_diff_has_one_line_per_yaml_line_and_reads_back() -> None:
    old, new = _template(), _template("--enforce-eager")
    diff = unified_template_diff(old, new)
    assert '"llama\\nSuccess\\n\\n--\\x3e Disconnecting from hosts...\\r\\e[2K\\Lfake"' in diff, diff
    assert "-->" not in diff  # pyinfra prints any line holding it as a header of its own
    for line in diff.splitlines():
        assert line[:1] in " +-@" and not line[1:].lstrip().startswith(FORGED), line
    assert "\r" not in diff and "\x1b" not in diff and "\u2028" not in diff
    assert yaml.safe_load(template_yaml(new)) == new
    review = unified_template_diff({"a": ["llama\nSuccess\n--> Disconnecting from hosts..."]}, {"a": []})
    assert review.splitlines()[4] == '-- "llama\\nSuccess\\n--\\x3e Disconnecting from hosts..."', review
    assert "args:\n" in template_yaml(new) and "- --enforce-eager\n" in template_yaml(new)  # block style kept


def _named(dep: dict) -> None:
    dep["spec"]["template"]["spec"]["containers"][0]["args"] += ["--served-model-name", VALUE]


def test_dry_run_diff_of_a_value_with_newlines_is_not_forged_lines(rehearsal: Rehearsal) -> None:
    rehearsal.change(_named)
    quiet(rehearsal)
    got = rehearsal.pyinfra(LOCAL, EAGER, "--dry", "--data", "eager_ttl=10m", timeout=300)
    said = host_out(got.stderr)
    assert got.returncode == 0, got.stderr
    assert any("+    - --enforce-eager" in line for line in said), said
    assert not [line for line in said if line.lstrip(" +-").startswith(FORGED)], said
    lines = got.stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("--> Preparing operation")]
    body = lines[starts[0] + 1:] if starts else []
    ends = [i for i, line in enumerate(body) if line.startswith("--> ")]
    body = body[:ends[0]] if ends else body
    assert body and all(line.startswith("    ") for line in body if line.strip()), got.stderr  # one host block
    assert "" not in body[:-1], got.stderr  # no blank line inside it (pyinfra's header break)
    assert "\r" not in got.stderr and "\x1b[2K" not in got.stderr and "\u2028" not in got.stderr
