"""Forms that may reassign a variable before vLLM's statement without the reading executing them (hostile review 16,
G1): a call of a function the script defines (its body runs in the calling shell, XCU 2.9.5), ``eval``, ``.``,
``read``, a compound command, ``getopts``, an arithmetic assignment and ``${X:=v}``. Each must leave the variable
``Unread`` ("cannot predict"), never its earlier value. Where ``dash`` is installed each script is also run by it, and
the reading must be either that value or ``Unread`` — never a third one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from vllm_remedy.vllm.cmdline.script_vars import Table, Unread, expand

DASH = shutil.which("dash")

# (before vLLM, vLLM's word, whether it must be Unread, what dash prints for it; None: not POSIX, dash not asked)
CASES = [
    ("tune() { UTIL=0.35; }\nUTIL=0.90\ntune", "$UTIL", True, "<0.35>"),
    ("tune () {\n  UTIL=0.35\n}\nUTIL=0.90\ntune", "$UTIL", True, "<0.35>"),
    ("set_len() { export LEN=2048; }; LEN=8192; set_len", "$LEN", True, "<2048>"),
    ("setup() { LEN=4096; }; LEN=65536; setup && true", "$LEN", True, "<4096>"),  # a call inside a list
    ("function tune { UTIL=0.35; }\nUTIL=0.90\ntune", "$UTIL", True, None),  # bash/ksh syntax
    ("LEN=8192; eval 'LEN=2048'", "$LEN", True, "<2048>"),
    ("LEN=8192; . {file}", "$LEN", True, "<2048>"),
    ("LEN=8192; read LEN < {file}", "$LEN", True, "<LEN=2048>"),
    ("LEN=8192; { LEN=2048; }", "$LEN", True, "<2048>"),
    ("LEN=8192; if true; then LEN=2048; fi", "$LEN", True, "<2048>"),
    ("LEN=8192; : $((LEN=2048))", "$LEN", True, "<2048>"),
    ("LEN=8192; : $((LEN+=1))", "$LEN", True, "<8193>"),
    ("LEN=8192; X=$((LEN=2048))", "$LEN", True, "<2048>"),
    ("LEN=8192; A=${LEN:=1}; LEN=; A=${LEN:=2048}", "$LEN", True, "<2048>"),
    ("LEN=; : ${LEN:=2048}", "$LEN", True, "<2048>"),
    ("unset LEN", "${LEN:=2048} $LEN", True, "<2048><2048>"),  # assigned earlier in vLLM's own statement
    ("OPTIND=1; set -- -a; getopts a O", "$OPTIND", True, "<2>"),
    ("set -- 2048", "$1", True, "<2048>"),
    ('alias setu="UTIL=0.35"\nUTIL=0.90\nsetu', "$UTIL", True, "<0.35>"),
    ("tune() { UTIL=0.35; }; f=tune; UTIL=0.90; $f", "$UTIL", True, "<0.35>"),  # called through a variable
    ("UTIL=0.90; let UTIL=5", "$UTIL", True, None),  # bash
    # forms that set nothing: the reading keeps the value
    ("LEN=8192; tune() { LEN=1; }", "$LEN", True, "<8192>"),  # never called: the body is read as a compound
    ("LEN=8192; export -p > /dev/null", "$LEN", False, "<8192>"),
    ("LEN=8192; : $((LEN == 1))", "$LEN", False, "<8192>"),
]


def _words(before: str, word: str, file: Path) -> list[str] | Unread:
    table = Table(f"{before}\nexec vllm serve m {word}\n", {}, unset_is_empty=True)
    fields: list[str] = []
    for w in word.split():
        got = expand(w, table)
        if isinstance(got, Unread):
            return got
        fields += got
    return fields


@pytest.mark.parametrize(("before", "word", "unread", "sh"), CASES)
def test_a_reassignment_the_reading_does_not_run_leaves_it_unread(
        tmp_path: Path, before: str, word: str, unread: bool, sh: str | None) -> None:
    file = tmp_path / "set.sh"
    file.write_text("LEN=2048\n")
    before = before.replace("{file}", str(file))
    got = _words(before, word, file)
    assert isinstance(got, Unread) == unread, got
    if DASH is None or sh is None:
        return
    ran = subprocess.run([DASH, "-c", f"{before}\nprintf '<%s>' {word}"], capture_output=True, text=True, timeout=10,
                         check=True)
    assert ran.stdout == sh, ran
    if not unread:
        assert "".join(f"<{f}>" for f in got) == ran.stdout  # type: ignore[union-attr]


def test_the_rehearsal_pod_refuses_a_value_a_function_call_reassigns() -> None:
    """The rehearsal pod reads the script the same way: it logs why and does not start vLLM with 0.90 (sh: 0.35)."""
    from datetime import UTC, datetime

    from vllm_remedy.sim.vllm_pod.script_shell import prepare

    script = ("tune() { UTIL=0.35; }\nUTIL=0.90\ntune\n"
              "exec vllm serve m --max-model-len 16384 --gpu-memory-utilization $UTIL\n")
    got = prepare({"name": "vllm", "command": ["sh", "-c"], "args": [script]}, {}, "p", datetime.now(UTC))
    assert got.refused is not None and "calls a function the script defines" in got.refused, got


@pytest.mark.parametrize(("before", "refused"), [
    ("set -- --max-model-len 2048", True), ("shift", True), ("set x", True),
    ("set -e -o pipefail", False), ("set -eu", False),
])
def test_set_or_shift_before_a_passthrough_is_refused(before: str, refused: bool) -> None:
    """`set -- ...` replaces what `"$@"` gives vLLM (the container's args after the script): not read, so refused."""
    from vllm_remedy.vllm.cmdline.parse import Token
    from vllm_remedy.vllm.cmdline.shell_script import UnsafeScriptError, vllm_statement

    tokens = [Token(v, "args", i) for i, v in enumerate(["sh", "-c", f'{before}\nexec vllm serve m "$@"', "sh",
                                                         "--max-model-len", "8192"])]
    if not refused:
        assert vllm_statement(tokens, 2) is not None
        return
    with pytest.raises(UnsafeScriptError, match="positional parameters"):
        vllm_statement(tokens, 2)
