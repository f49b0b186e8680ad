"""Read a vLLM container log (runbook step 2) and say how the start ended, with the figures that matter.

Pass the pod's last exit code / termination reason when you have them: a host OOM kill (exit 137,
reason OOMKilled) leaves no trace in vLLM's own log. Exit 0 whatever the start did (a finding, not an
error); 2 for a log that cannot be read.

Examples:
  kubectl -n llm logs deploy/llama-8b --previous > previous.log
  vllm-remedy diagnose --log previous.log
  kubectl -n llm logs POD --previous | vllm-remedy diagnose --log - --exit-code 137 --reason OOMKilled -o json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vllm_remedy.envelope import dumps, envelope
from vllm_remedy.errors import UserError
from vllm_remedy.vllm.failures import FAILURES, OOM_PHASES
from vllm_remedy.vllm.startup_log import StartupReport, classify, parse_startup_log, unplayed
from vllm_remedy.vllm.versions import rules

NAME = "diagnose"
ORDER = 20
HELP = "classify a vLLM startup log (OOM, KV cache, max-model-len, ...) and show its memory figures"

_FIGURES = (
    ("vLLM version", "vllm_version", "{}"), ("engine", "engine", "{}"), ("model", "model", "{}"),
    ("tensor parallel", "tp_size", "{}"), ("GPU total", "total_gpu_gib", "{:.2f} GiB"),
    ("gpu-memory-utilization", "gpu_memory_utilization", "{:g}"), ("weights", "weights_gib", "{:.2f} GiB"),
    ("activation peak", "activation_gib", "{:.2f} GiB"), ("non-torch", "non_torch_gib", "{:.2f} GiB"),
    ("KV cache", "kv_cache_gib", "{:.2f} GiB"), ("GPU blocks", "gpu_blocks", "{:,}"),
    ("KV cache tokens", "kv_cache_tokens", "{:,}"), ("max-model-len", "max_model_len", "{:,}"),
    ("CUDA graphs", "cudagraph_gib", "{:.2f} GiB"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Log in (file or stdin), plus the pod status the log itself cannot show."""
    parser.add_argument("--log", required=True, metavar="FILE", help="container log file, or - for stdin")
    parser.add_argument("--exit-code", type=int, metavar="N", help="the container's last exit code")
    parser.add_argument("--reason", metavar="R", help="the container's last termination reason (e.g. OOMKilled)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")


def run(args: argparse.Namespace) -> int:
    """Diagnose and print; exit 0 whatever the failure (it is a finding, not an error of this tool)."""
    report = parse_startup_log(_read(args.log))
    report.failure = classify(report, exit_code=args.exit_code, reason=args.reason)
    if args.output == "json":
        print(dumps(envelope("DiagnoseReport", {**report.to_dict(), "rules": rules_of(report), "hint": hint(report)})))
    else:
        print(render_text(report))
    return 0


def _read(path: str) -> str:
    """The log's text; a file that is not a text log is a user error, not a diagnosis."""
    name = "<stdin>" if path == "-" else path  # the same name `args` uses for stdin
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise UserError(f"{name}: cannot read the log ({exc.strerror or exc}); expected a readable file or -") \
            from None
    if b"\x00" in data[:65536]:
        raise UserError(f"{name}: binary data, expected a text log (kubectl logs output)")
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        raise UserError(f"{name}: the log is empty; expected the output of kubectl logs --previous")
    return text


def hint(report: StartupReport) -> str:
    """One line pointing at the runbook step that fixes this failure (the registry's hint); none for a start the
    rehearsal does not play, which is no failure of vLLM's to roll back."""
    if report.unplayed is not None:
        return unplayed.HINT
    return FAILURES[report.failure].hint_for(report.failure_detail)


def rules_of(report: StartupReport) -> str | None:
    """How the logged release's rules were made (``modelled``, ``extrapolated from 0.34.0``): the defaults a log
    leaves out (the utilization, the engine) are read by them. None when the log names no version: no release's
    rules are applied then."""
    return rules(report.vllm_version).provenance if report.vllm_version else None


def render_text(report: StartupReport) -> str:
    """Headline, the figures the runbook's grep looks for, vLLM's own lines as evidence, then the hint."""
    if report.unplayed is not None:  # a rehearsal pod's record (startup_log.unplayed): not a failure class
        lines = [f"not played: {unplayed.said(report.unplayed)}"]
    else:
        lines = [f"{report.failure.value}: {FAILURES[report.failure].headline}"]
    phase = report.failure_detail.get("phase")
    if phase and phase not in OOM_PHASES:  # a phase with a class of its own is already in the headline
        lines[0] += f" (during {phase.replace('_', ' ')})"
    rows = [(label, fmt.format(getattr(report, name))) for label, name, fmt in _FIGURES
            if getattr(report, name) is not None]
    if report.vllm_version and rules(report.vllm_version).qualified:  # as logged, and how its rules were made
        rows[0] = (rows[0][0], f"{report.vllm_version} (rules: {rules_of(report)})")
    if report.max_concurrency is not None:
        per = f" at {report.concurrency_max_len:,} tokens" if report.concurrency_max_len else ""
        rows.append(("max concurrency", f"{report.max_concurrency:.2f}x{per}"))
    shown = {name for _, name, _ in _FIGURES}
    rows += [(key.replace("_", " "), str(value)) for key, value in report.failure_detail.items() if key not in shown]
    width = max((len(label) for label, _ in rows), default=0)
    lines += ["", *(f"  {label.ljust(width)}  {value}" for label, value in rows)]
    if report.evidence:
        lines += ["", "evidence:", *(f"  {line}" for line in report.evidence[-20:])]
    lines += ["", f"hint: {hint(report)}"]
    return "\n".join(lines)
