"""The rehearsal's own record of a start it does not play (``sim.vllm_pod.unmodelled_start``), read from a log.

A rehearsal pod whose model the memory model cannot size logs its start up to the model config, then one WARNING
whose source is ``[vllm-remedy rehearsal]`` instead of a vLLM file, and runs on, never Ready. That is no failure of
vLLM, whose outcome is simply not predicted there: read as one it was "unknown: the start failed ..." with "roll back"
advice, a rollback of a start vLLM may well serve. The record is not vLLM's words, so nothing outside a rehearsal
prints it.
"""

from __future__ import annotations

import re

from vllm_remedy.vllm.startup_log.lines import Line

#: The record's marker (``unmodelled_start.SOURCE`` and ``said``), and its why: up to the sentence the pod adds
#: about itself ("What vLLM does with it is not predicted, ...").
_RECORD = re.compile(r"\[vllm-remedy rehearsal\] cannot play this start: (?P<why>.+?)(?:\. What vLLM does .*)?$")

#: diagnose's hint for it: nothing of vLLM's failed, so nothing to roll back.
HINT = ("no rollback: vLLM did not fail, the rehearsal just does not predict this start; run it on a real "
        "pod (or a staging cluster) to know how it ends")


def why(lines: list[Line]) -> tuple[str, int] | None:
    """(why the rehearsal does not play the start, the record's line) when the log holds its record, else None."""
    for line in lines:
        if "[vllm-remedy rehearsal] cannot play" in line.text and (m := _RECORD.search(line.text)):
            return m["why"].strip(), line.index
    return None


def said(reason: str) -> str:
    """What diagnose says instead of a failure class: no rollback, since nothing of vLLM's failed."""
    return f"the rehearsal does not play this start: {reason}; confirm it on a real pod"
