""".pre-commit-hooks.yaml: the hook's shape and its command run as pre-commit runs it.

pre-commit itself is not a test dependency (installing a hook repository builds a fresh virtualenv from the
package index), so this replays what it does: select files with ``re.search`` on ``files``/``exclude``, then
run ``shlex.split(entry) + args + filenames`` (pre_commit's ``hook.cmd`` handed to its xargs).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RUNBOOK = ROOT / "tests" / "data" / "manifests" / "runbook"
(HOOK,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())


def selected(path: str) -> bool:
    return bool(re.search(HOOK["files"], path)) and not re.search(HOOK.get("exclude", "^$"), path)


def run_hook(files: list[str], args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    cmd = shlex.split(HOOK["entry"]) + list(args) + [f for f in files if selected(f)]
    cmd[0] = str(Path(sys.executable).parent / cmd[0])  # the console script of this venv, as pre-commit's own
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_hook_shape():
    assert (HOOK["id"], HOOK["language"], HOOK["entry"]) == ("vllm-remedy-check", "python", "vllm-remedy check -f")
    scripts = {e.name for e in entry_points(group="console_scripts")}
    assert shlex.split(HOOK["entry"])[0] in scripts  # what `language: python` installs with the package
    assert [p for p in ("k8s/llm/deploy.yaml", "base/kustomization.yml", "README.md", "charts/vllm/values.yaml",
                        "charts/vllm/templates/deployment.yaml", "ci.json") if selected(p)] == [
        "k8s/llm/deploy.yaml", "base/kustomization.yml", "charts/vllm/values.yaml"]


def test_hook_passes_the_good_revision_and_fails_the_bad_one(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("not yaml: [")
    good = [str(RUNBOOK / "good-rev14.yaml"), str(readme)]
    assert run_hook(good).returncode == 0
    got = run_hook([*good, str(RUNBOOK / "bad-rev15.yaml")])
    assert got.returncode == 1 and "max_len_exceeds_kv on NVIDIA-L4" in got.stdout


def test_hook_args_go_between_entry_and_files():
    got = run_hook([str(RUNBOOK / "good-rev14.yaml")], ("--policy", "policies/", "-o", "json"))
    assert got.returncode == 0, got.stderr
    assert '"policy": "llama-8b"' in got.stdout
