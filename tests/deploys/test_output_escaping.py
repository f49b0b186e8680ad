"""A manifest value cannot forge an output line, through the real pyinfra CLI on the rehearsal cluster.

``--served-model-name "x\\nfake"`` was printed raw into diagnose's revision diff, so the value's second line became
``[host] fake`` — a manifest could print a "Success" or a prediction line of its own. Newlines, carriage returns and
escape bytes in manifest values are now written as escapes (``vllm_remedy.kube.printable``) on the lines deploys
show."""

from __future__ import annotations

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal
from fixtures.restore_world import DIAGNOSE, LOCAL, host_out, quiet

rehearsal = pyinfra_run.rehearsal

VALUE = "x\nprediction on NVIDIA-L40S: fits\rSuccess\x1b[2K\u2028fake"
SHOWN = "--served-model-name: (absent) → x\\nprediction on NVIDIA-L40S: fits\\rSuccess\\x1b[2K\\u2028fake"


def _named(dep: dict) -> None:
    dep["spec"]["template"]["spec"]["containers"][0]["args"] += ["--served-model-name", VALUE]


def test_a_newline_in_a_flag_value_is_escaped_in_diagnose_not_a_line_of_its_own(rehearsal: Rehearsal) -> None:
    rehearsal.change(_named)
    quiet(rehearsal)
    for flag in ("--dry", "-y"):
        got = rehearsal.pyinfra(LOCAL, DIAGNOSE, flag, timeout=300)
        said = host_out(got.stderr)
        assert got.returncode == 0, got.stderr
        assert SHOWN in said, said
        assert not [line for line in said if line.startswith(("prediction on", "Success", "fake"))], said
        assert "\r" not in got.stderr and "\x1b" not in got.stderr and "\u2028" not in got.stderr
