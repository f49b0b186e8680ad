#!/usr/bin/env python3
"""Make a real kubectl available to the tests without touching the system.

Order: $VLLM_REMEDY_KUBECTL, the Google Cloud SDK's kubectl.1.32 (what these machines carry),
an earlier unpack under .tools/, then Debian's kubernetes-client (kubectl 1.20) fetched with
`apt-get download` and unpacked with `dpkg-deb -x` — never `apt-get install`, which would replace
/usr/bin/kubectl. Prints the path found; prints a reason and exits 0 when none can be had, so the
kubectl tests skip with that reason instead of CI failing on a machine without apt.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".tools"
UNPACKED = TOOLS / "kubernetes-client" / "usr" / "bin" / "kubectl"
SDK = Path("/usr/lib/google-cloud-sdk/bin/kubectl.1.32")


def candidates() -> list[Path]:
    env = os.environ.get("VLLM_REMEDY_KUBECTL")
    return [Path(p) for p in (env, SDK, UNPACKED) if p]


def find() -> Path | None:
    for path in candidates():
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def fetch_debian() -> str | None:
    """Unpack Debian's kubectl into .tools/; return a reason string on failure."""
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        return "apt-get/dpkg-deb not available"
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(["apt-get", "download", "kubernetes-client"], cwd=tmp,
                             capture_output=True, text=True, timeout=300)
        debs = list(Path(tmp).glob("kubernetes-client_*.deb"))
        if not debs:
            return f"apt-get download kubernetes-client failed: {got.stderr.strip()[-200:]}"
        dest = TOOLS / "kubernetes-client"
        dest.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(dest)], check=True, timeout=120)
    return None if UNPACKED.exists() else "package unpacked but usr/bin/kubectl missing"


def main() -> int:
    found = find()
    if found is None:
        reason = fetch_debian()
        found = find()
        if found is None:
            print(f"no kubectl: {reason}; kubectl tests will skip", file=sys.stderr)
            return 0
    print(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
