"""`vllm-remedy check`'s three views: text for a terminal, the JSON envelope, JUnit XML for CI test reporters.

JUnit is the one format GitLab (``artifacts:reports:junit``), Jenkins (``junit``) and GitHub test reporters all
read: one ``testcase`` per workload × container, a ``failure`` with a one-line ``message`` and the findings as
text. Built with ``xml.etree`` so names with ``<`` or ``&`` stay well-formed; characters XML 1.0 cannot hold at
all (control characters, which etree writes as they are) are written as backslash escapes (``\\x1b``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from vllm_remedy.drift.manifest_check import Result
from vllm_remedy.drift.manifest_fix import describe_fix
from vllm_remedy.envelope import envelope

KIND = "CheckReport"
SUITE = "vllm-remedy check"


def _summary(results: list[Result]) -> dict[str, int]:
    failed = [r for r in results if not r.ok]
    return {"workloads": len(results), "passed": len(results) - len(failed), "failed": len(failed),
            "findings": sum(len(r.findings) for r in results)}


def report(results: list[Result], files: list[str]) -> dict[str, Any]:
    """The ``-o json`` document: a summary and one item per workload × container."""
    return envelope(KIND, {"files": ["<stdin>" if f == "-" else f for f in files], "summary": _summary(results),
                           "items": [r.to_json() for r in results]})


def _headline(r: Result) -> str:
    w = r.workload
    return f"{w.source}: {w.object} container {w.container}"


def _ok_line(r: Result) -> str:
    p = r.prediction
    e = p.estimate if p else None
    said = (f"{e.outcome.value} on {p.gpu}, maximum concurrency {e.max_concurrency:.2f}x at "
            f"max-model-len {e.max_model_len:,}" if p and e else "no prediction")
    return f"ok    {_headline(r)} — {said} (policy {r.policy})"


def _finding_lines(r: Result) -> list[str]:
    """Each finding with its own fix, except where that is the planner's step: it is printed once, last."""
    planned = describe_fix(r.fix) if r.fix is not None else None
    lines = []
    for f in r.findings:
        lines.append(f"  {f.check} [{f.severity}]: {f.reason}")
        if f.fix != planned:
            lines.append(f"    fix: {f.fix}")
    if planned is not None:
        lines.append(f"  smallest fix (planner): {planned}")
    return lines


def text(results: list[Result], files: int) -> str:
    """Failures first with their findings and fixes, then the passes, then one summary line."""
    lines: list[str] = []
    for r in sorted(results, key=lambda r: r.ok):
        if r.ok:
            lines.append(_ok_line(r))
        else:
            lines.append(f"FAIL  {_headline(r)} (policy {r.policy})")
            lines += _finding_lines(r)
        lines += [f"  note: {n}" for n in r.notes]
    s = _summary(results)
    if not results:
        lines.append(f"no vLLM workload found in {files} file(s)")
    else:
        lines.append(f"checked {s['workloads']} vLLM workload(s) in {files} file(s): {s['passed']} passed, "
                     f"{s['failed']} failed")
    return "\n".join(lines)


def junit(results: list[Result]) -> str:
    """JUnit XML: ``testsuites`` > ``testsuite`` > one ``testcase`` per workload × container.

    ``xml.etree`` is imported here, for ``-o junit`` only (~3 ms of every text or JSON check otherwise)."""
    import xml.etree.ElementTree as ET

    s = _summary(results)
    root = ET.Element("testsuites", name=SUITE, tests=str(s["workloads"]), failures=str(s["failed"]), errors="0")
    suite = ET.SubElement(root, "testsuite", name=SUITE, tests=str(s["workloads"]), failures=str(s["failed"]),
                          errors="0", skipped="0")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=r.workload.source,
                             name=f"{r.workload.object} container {r.workload.container}")
        if r.ok:  # the notes too (rules extrapolated for the image's release): a CI job's log is all they get
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join([_ok_line(r), *(f"  note: {n}" for n in r.notes)])
            continue
        first = r.findings[0]
        failure = ET.SubElement(case, "failure", type=first.check,
                                message=f"{first.check}: {first.reason}" + (
                                    f" (+{len(r.findings) - 1} more)" if len(r.findings) > 1 else ""))
        failure.text = "\n".join([_headline(r), *_finding_lines(r), *(f"  note: {n}" for n in r.notes)])
    for element in root.iter():
        element.text = element.text and _xml_chars(element.text)
        element.attrib = {k: _xml_chars(v) for k, v in element.attrib.items()}
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


@cache
def _not_xml() -> re.Pattern[str]:
    """Compiled on first use: a class over most of Unicode costs ~4 ms of CPU to compile, which every text and JSON
    check paid at import for -o junit's sake."""
    return re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_chars(text: str) -> str:
    """``text`` with what XML 1.0 forbids (C0 controls but tab/newline/CR, surrogates, U+FFFE/F) escaped."""
    return _not_xml().sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else
                          f"\\u{ord(m.group()):04x}", text)
