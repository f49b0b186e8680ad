#!/usr/bin/env python3
"""How fast hostile YAML is refused, next to reading a normal ~200-line manifest, in one run.

Inputs: the hostile texts of ``tests/fixtures/yaml_bombs.py`` (the same the tests refuse), a normal
manifest (the three objects of two real vLLM manifests from ``tests/data/manifests/real`` as one
``kind: List``, as ``kubectl get -o yaml`` prints them: ~207 lines, one document, so every reader reads it) and
the largest input still accepted (``MAX_NODES - 1`` nodes). Each goes through the three in-process
readers — ``manifest.load_documents`` (ruamel.yaml, manifests), ``yamlfile.read_yaml`` (PyYAML, seeds and
scenarios), ``policy.read_mapping`` (PyYAML, policies) — and, with ``--cli``, through
``vllm-remedy args show -f FILE`` as a subprocess (Python start-up included). Rounds alternate the input
order, so every input sees the same machine noise. Prints one JSON document (``--out`` also writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import yaml  # noqa: E402

from fixtures.yaml_bombs import alias_bomb, hostile_inputs  # noqa: E402
from vllm_remedy import yamlfile  # noqa: E402
from vllm_remedy.errors import UserError  # noqa: E402
from vllm_remedy.policy.files import read_mapping  # noqa: E402
from vllm_remedy.vllm import manifest  # noqa: E402

REAL = ROOT / "tests" / "data" / "manifests" / "real"
NORMAL = ("gaie-gpu-deployment.yaml", "gke-vllm-gemma-3-27b-it.yaml")


def inputs() -> dict[str, str]:
    """name → text; ``normal`` and ``largest-accepted`` read, every other one is refused."""
    docs = [d for name in NORMAL for d in yaml.safe_load_all((REAL / name).read_text()) if d]
    normal = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs}, sort_keys=False, width=100)
    out = {"normal": normal, "largest-accepted": "[" + "0," * (yamlfile.MAX_NODES - 2) + "0]\n",
           "alias-bomb": alias_bomb()}
    out.update({name: text for name, (text, _) in hostile_inputs().items()})
    return out


def readers(path: Path) -> dict[str, Callable[[], Any]]:
    text = path.read_text()
    return {"manifest": lambda: manifest.load_documents(text, str(path)),
            "read_yaml": lambda: yamlfile.read_yaml(path, "bench input"),
            "policy": lambda: read_mapping(path)}


def timed(call: Callable[[], Any]) -> tuple[float, str]:
    """(ms, outcome): ``read`` or the refusal line."""
    started = time.perf_counter()
    try:
        call()
        outcome = "read"
    except UserError as exc:
        outcome = str(exc)
    return (time.perf_counter() - started) * 1000, outcome


def cli(path: Path) -> tuple[float, str]:
    started = time.perf_counter()
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "args", "show", "-f", str(path)],
                         capture_output=True, text=True, timeout=600)
    ms = (time.perf_counter() - started) * 1000
    lines = got.stderr.strip().splitlines()
    return ms, f"exit {got.returncode}, {len(lines)} stderr line(s)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cli", action="store_true", help="also time `vllm-remedy args show -f` per input")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    texts = inputs()
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in texts}
    outcomes: dict[str, dict[str, str]] = {name: {} for name in texts}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {name: Path(tmp) / f"{name}.yaml" for name in texts}
        for name, text in texts.items():
            paths[name].write_text(text)
        order = list(texts)
        for r in range(args.rounds):
            for name in order if r % 2 == 0 else order[::-1]:
                arms = readers(paths[name])
                if args.cli:
                    arms["cli"] = lambda p=paths[name]: p  # placeholder, timed below
                for arm, call in arms.items():
                    ms, outcome = cli(paths[name]) if arm == "cli" else timed(call)
                    samples[name].setdefault(arm, []).append(ms)
                    outcomes[name][arm] = outcome.replace(str(paths[name]), f"{name}.yaml")

    normal = {arm: statistics.median(v) for arm, v in samples["normal"].items()}
    results = {}
    for name, arms in samples.items():
        results[name] = {
            "bytes": len(texts[name].encode()),
            "lines": texts[name].count("\n") + (not texts[name].endswith("\n")),
            "arms": {arm: {"median_ms": round(statistics.median(v), 2), "max_ms": round(max(v), 2),
                           "ratio_to_normal": round(statistics.median(v) / normal[arm], 2),
                           "outcome": outcomes[name][arm]} for arm, v in arms.items()},
        }
    doc = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "python": sys.version.split()[0],
        "rounds": args.rounds,
        "limits": {k: getattr(yamlfile, k) for k in ("MAX_CHARS", "MAX_DEPTH", "MAX_DOCUMENTS", "MAX_NODES",
                                                     "MAX_ALIAS_REFS", "MAX_INT_DIGITS", "MAX_ALIAS_EXPANSION")},
        "inputs": results,
    }
    text = json.dumps(doc, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
