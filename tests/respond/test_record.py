"""What the responder reads off pyinfra's output and writes on the record (pure parts; lines as pyinfra prints)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from vllm_remedy.respond.deploy import DeployRun, host_lines
from vllm_remedy.respond.record import REPORTING_CONTROLLER, Incident, event_body, write_note
from vllm_remedy.respond.routing import InventoryHost
from vllm_remedy.respond.webhook import Alert

HOST = "@k8s/rehearsal/llm/llama-8b"
OUTPUT = f"""--> Starting operation: Roll back a crash-looping revision to the last known-good one
    [{HOST}] noop: every crash seen is already recorded
    [{HOST}] record on replicaset llama-8b-85bd68ffdd (revision 15) that it was seen dying: written (resourceVersion 9)
    [{HOST}] roll back deployment llm/llama-8b from revision 15 to revision 14 (llama-8b-6b765dc795)
    [{HOST}] --- deployment llm/llama-8b template (current)
    [{HOST}] +++ deployment llm/llama-8b template (planned)
    [{HOST}] @@ -7,6 +7,8 @@
    [{HOST}]      - --revision
    [{HOST}] +    - --max-model-len
    [{HOST}] prediction on NVIDIA-L40S: fits — KV cache 197,840 tokens
    [{HOST}] roll back deployment llm/llama-8b from revision 15 to revision 14 (llama-8b-6b765dc795): written (resourceVersion 334)
    [{HOST}] Success
    [@k8s/other/llm/x] roll back something else: written (resourceVersion 1)
"""  # noqa: E501
ALERT = Alert("firing", {"alertname": "VllmCrashLoopBackOff"}, {}, datetime(2026, 1, 1, tzinfo=timezone.utc),
              "abcdef0123456789")


def run(returncode: int = 0, dry: bool = False, text: str = OUTPUT) -> DeployRun:
    return DeployRun("restore", dry, returncode, host_lines(text, HOST), 7.0)


def test_lines_changes_diff_and_prediction_of_one_host() -> None:
    got = run()
    assert got.lines[0] == "noop: every crash seen is already recorded"
    assert got.changes == ["record on replicaset llama-8b-85bd68ffdd (revision 15) that it was seen dying",
                           "roll back deployment llm/llama-8b from revision 15 to revision 14 (llama-8b-6b765dc795)"]
    assert got.remedies == got.changes[1:]
    assert got.diff == ["--- deployment llm/llama-8b template (current)",
                        "+++ deployment llm/llama-8b template (planned)", "@@ -7,6 +7,8 @@", "     - --revision",
                        "+    - --max-model-len"]
    assert got.predictions == ["prediction on NVIDIA-L40S: fits — KV cache 197,840 tokens"]
    assert got.failure is None
    assert run(dry=True).changes == ["roll back deployment llm/llama-8b from revision 15 to revision 14 "
                                     "(llama-8b-6b765dc795)"]


def test_results() -> None:
    host = InventoryHost(HOST, "rehearsal", "llm", "llama-8b")
    cases = {(0, OUTPUT): "remediated", (1, OUTPUT): "failed",
             (0, f"    [{HOST}] noop: nothing\n"): "nothing-to-change",
             (1, f"    [{HOST}] record on replicaset r (revision 15) x: written (resourceVersion 2)\n"
                 f"    [{HOST}] no earlier revision is predicted to serve\n    [{HOST}] Error\n"): "refused"}
    for (code, text), want in cases.items():
        incident = Incident(ALERT, host, "restore", "auto")
        incident.finish(run(code, text=text))
        assert incident.result == want, (code, text)
        assert (incident.restored_after is not None) == (want == "remediated")
    assert incident.run.failure == "no earlier revision is predicted to serve"
    assert incident.summary().startswith(f"VllmCrashLoopBackOff on {HOST}: deploys/restore.py refused: no earlier")


def test_a_dry_run_that_a_deploy_refuses_is_refused_not_a_dry_run_result() -> None:
    """--dry exits 1 exactly when -y would fail at a refusal (an operation's own, not only the GitOps stance's): the
    record says refused, the refusal leading, as the -y run's would."""
    host = InventoryHost(HOST, "rehearsal", "llm", "llama-8b")
    said = ("refused: leaderworkerset llm/qwen-lws: leader and worker templates disagree on --max-model-len (leader "
            "32768, worker 16384); make them agree before remediating")
    text = f"    [{HOST}] noop: no temporary toggle has expired\n    [{HOST}] {said}\n"
    for dry in (True, False):
        incident = Incident(ALERT, host, "budget", "dry-run" if dry else "auto")
        incident.finish(run(1, dry=dry, text=text))
        assert (incident.result, incident.run.failure) == ("refused", said), dry
    incident = Incident(ALERT, host, "budget", "dry-run")
    incident.finish(run(0, dry=True, text=f"    [{HOST}] noop: nothing\n"))
    assert incident.result == "dry-run"


def test_event_and_note(tmp_path: Path) -> None:
    incident = Incident(ALERT, InventoryHost(HOST, "rehearsal", "llm", "llama-8b"), "restore", "auto")
    incident.note("alert received")
    incident.finish(run())
    body = event_body(incident, {"metadata": {"name": "llama-8b", "uid": "u1", "resourceVersion": "5"}},
                      "Remediated", "Normal", incident.summary(), "restore")
    assert body["reportingComponent"] == REPORTING_CONTROLLER and body["involvedObject"]["uid"] == "u1"
    assert body["metadata"] == {"generateName": "llama-8b.", "namespace": "llm"}
    md = write_note(tmp_path / "notes", incident)
    doc = json.loads(md.with_suffix(".json").read_text())
    assert doc["result"] == "remediated" and doc["diff"][0].startswith("--- ")
    assert [e["what"] for e in doc["timeline"]] == ["alert received", "restore remediated"]
    assert "## Diff" in md.read_text() and sorted(p.name for p in md.parent.iterdir()) == sorted(
        [md.name, md.with_suffix(".json").name])  # no temp file left


def test_note_names_and_markdown_are_built_from_sanitized_parts(tmp_path: Path) -> None:
    """Alertmanager's fingerprints are hex (webhook.parse); namespace and name come from the inventory — still,
    nothing of them may climb out of the notes directory or open a Markdown line of its own."""
    hostile = Alert("firing", {"alertname": "Vllm\n# Injected `x`"}, {}, datetime(2026, 1, 1, tzinfo=timezone.utc),
                    "abcdef0123456789")
    incident = Incident(hostile, InventoryHost(HOST, "rehearsal", "../..", "a/b\nc"), "restore", "auto")
    incident.note("alert received")
    incident.finish(run())
    md = write_note(tmp_path / "notes", incident)
    assert md.parent == tmp_path / "notes" and md.name.endswith("-..-a-b-c-abcdef012345.md"), md.name
    text = md.read_text()
    assert "\n# Injected" not in text and "`Vllm\\n# Injected 'x'`" in text
