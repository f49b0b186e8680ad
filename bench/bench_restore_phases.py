#!/usr/bin/env python3
"""Where ``deploys/restore.py``'s API requests go: one restore on a fresh rehearsal cluster, each request attributed
to a phase by the call stack it was sent from.

The restore runs as in bench_restore.py (arm B: the real pyinfra CLI, the runbook incident, 60x). A
``sitecustomize`` put on the child's PYTHONPATH wraps ``KubeClient._send`` and ``KubeClient._open`` (watch
streams) and appends each request's stack to a file; the server's own count is printed next to it. Phases:
connect, facts (the verb commands pyinfra's facts run), plan (operation bodies: the clock, the rollback's read),
evidence (the crash record on revision 15's ReplicaSet: its plan and guarded write), write (the rollback's guarded
re-read + PATCH), wait (rollout wait and settle window). Run it with another checkout's interpreter to measure
that code (``<other checkout>/.venv/bin/python bench/bench_restore_phases.py``). Prints one JSON document.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.pyinfra_run import start_rehearsal  # noqa: E402
from fixtures.restore_world import LOCAL, RESTORE, incident  # noqa: E402

HOOK = '''
import os, traceback
from vllm_remedy.kube import client as _c

def _wrap(name):
    original = getattr(_c.KubeClient, name, None)
    if original is None:
        return
    def send(self, first, *args, **kwargs):
        method, path = ("WATCH", first) if name == "_open" else (first, args[0])
        where = " > ".join(f"{os.path.basename(f.filename)}:{f.name}" for f in traceback.extract_stack()[:-1])
        with open(os.environ["RESTORE_PHASES"], "a") as out:
            out.write(f"{method} {path} | {where}\\n")
        return original(self, first, *args, **kwargs)
    setattr(_c.KubeClient, name, send)

_wrap("_send")
_wrap("_open")
'''


def phase(line: str) -> str:
    """The phase a request belongs to, from the stack it was sent from."""
    request, _, stack = line.partition(" | ")
    if "k8s.py:connect" in stack:
        return "connect"
    if "wait_rollout" in stack:
        return "wait"
    if "evidence.py" in stack or ("run_write" in stack and "/replicasets/" in request):
        return "evidence"
    if "run_write" in stack:
        return "write"
    if "verbs.py" in stack:
        return "facts"
    return "plan"


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-restore-phases-"))
    (tmp / "hook").mkdir()
    (tmp / "hook" / "sitecustomize.py").write_text(HOOK)
    trace = tmp / "requests.txt"
    rehearsal = start_rehearsal(tmp / "cluster", speed=60.0)
    server: Counter[str] = Counter()
    try:
        incident(rehearsal)
        original = rehearsal.server.dispatch

        def counting(req: Any) -> Any:
            server["WATCH" if req.query.get("watch") in ("1", "true") else req.method] += 1
            return original(req)

        rehearsal.server.dispatch = counting  # type: ignore[method-assign]
        done = subprocess.run([sys.executable, "-m", "pyinfra", LOCAL, RESTORE, "-y"], cwd=rehearsal.tmp,
                              env=rehearsal.env({"PYTHONPATH": str(tmp / "hook"), "RESTORE_PHASES": str(trace)}),
                              capture_output=True, text=True, timeout=900)
    finally:
        rehearsal.stop()
    lines = trace.read_text().splitlines() if trace.exists() else []
    phases = Counter(phase(line) for line in lines)
    methods = Counter(line.split(" ", 1)[0] for line in lines)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    print(json.dumps({"exit_code": done.returncode, "requests_at_server": sum(server.values()),
                      "server_by_method": dict(server), "attributed": len(lines), "by_phase": dict(phases),
                      "by_method": dict(methods)}, indent=2))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
