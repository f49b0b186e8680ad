#!/usr/bin/env python3
"""Unpack the real tools the tests drive into .tools/, without touching the system.

- kubectl 1.20 from Debian's ``kubernetes-client`` (the tests also use the Cloud SDK's kubectl.1.32 when
  the machine has it): the rehearsal cluster is proven against both.
- promtool, the Prometheus server, the Pushgateway and node-exporter from Debian's ``prometheus*`` packages:
  the rendered alert rules, the metrics text and its two delivery paths are checked by the real programs,
  and confirm's gateway error-rate query is answered by a real Prometheus scraping a test endpoint.
- Alertmanager (``prometheus-alertmanager``): ``vllm-remedy respond`` is fed by the real webhook sender, and
  the receiver snippet in manifests/responder.yaml is checked by its amtool.

Each package is fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` into
``.tools/<package>/`` — never ``apt-get install``, which would replace /usr/bin/kubectl and start
services. A tool that cannot be had is reported with the reason and the script still exits 0, so its
tests skip saying why instead of CI failing on a machine without apt.
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
#: Debian package → the binaries inside it that the tests run.
PACKAGES = {
    "kubernetes-client": ("usr/bin/kubectl",),
    "prometheus": ("usr/bin/promtool", "usr/bin/prometheus"),
    "prometheus-pushgateway": ("usr/bin/prometheus-pushgateway",),
    "prometheus-node-exporter": ("usr/bin/prometheus-node-exporter",),
    "prometheus-alertmanager": ("usr/bin/prometheus-alertmanager", "usr/bin/amtool"),
}


def binaries(package: str) -> list[Path]:
    """Where the unpacked package keeps its binaries (the tests look there too)."""
    return [TOOLS / package / path for path in PACKAGES[package]]


def found(package: str) -> bool:
    """Every binary of ``package`` is unpacked and executable (a copy holding promtool only is fetched again)."""
    return all(path.is_file() and os.access(path, os.X_OK) for path in binaries(package))


def fetch(package: str) -> str | None:
    """Unpack one Debian package into .tools/<package>/; a reason string on failure."""
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        return "apt-get/dpkg-deb not available"
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(["apt-get", "download", package], cwd=tmp, capture_output=True, text=True, timeout=600)
        debs = list(Path(tmp).glob(f"{package}_*.deb"))
        if not debs:
            return f"apt-get download {package} failed: {got.stderr.strip()[-200:]}"
        dest = TOOLS / package
        dest.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(dest)], check=True, timeout=300)
    missing = [str(path) for path in binaries(package) if not path.is_file()]
    return f"{package} unpacked but {', '.join(missing)} missing" if missing else None


def main() -> int:
    for package in PACKAGES:
        reason = None if found(package) else fetch(package)
        if found(package):
            print(*binaries(package), sep="\n")
        else:
            print(f"no {package}: {reason}; its tests will skip", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
