"""Generate the per-release table of the model architectures and quantization methods vLLM implements.

Reads, for every extracted release under ``--sources`` (directories named ``src-<release>``, each holding the
``vllm/`` package of that release's PyPI wheel):

* the architecture tables of ``vllm/model_executor/models/registry.py`` (``vllm/model_executor/models/__init__.py``
  before 0.6.0): every module-level dict literal named ``_..._MODELS`` except ``_PREVIOUSLY_SUPPORTED_MODELS``,
  ``_OOT_SUPPORTED_MODELS``, ``_OOT_MODELS`` and ``_ROCM_...``; their keys are what ``ModelRegistry`` registers;
* the quantization methods of ``vllm/model_executor/layers/quantization/__init__.py``: the ``QuantizationMethods``
  ``Literal`` (0.7 on), else ``QUANTIZATION_METHODS`` (a dict's keys to 0.6.4, a list at 0.6.5-0.6.6);
* ``_PREVIOUSLY_SUPPORTED_MODELS`` (from 0.10.0), which ``_raise_for_unsupported`` names in its own words;
* how ``_raise_for_unsupported`` prints the registry's names: ``get_supported_archs`` returning
  ``list(self.models.keys())`` (a list) or ``self.models.keys()`` (``dict_keys([...])``);
* whether an unregistered architecture falls back to the Transformers backend by default: the registry holds
  ``TransformersForCausalLM`` (``_FALLBACK_MODEL``'s ``TransformersModel`` at 0.7-0.8.0) and
  ``model_loader/utils.py`` reads ``model_impl``'s ``auto``.

The table is compact: each name with the first read release that has it and the last (none when the newest read
release has it), once per run of consecutive read releases with it. Usage::

    python scripts/vllm_registry.py --sources DIR [--sources DIR2]  # write both copies
    python scripts/vllm_registry.py --sources DIR --check    # exit 1 when a copy differs from the sources
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The tools' table and the rehearsal pod's own copy (the pod never imports the tools' lookup).
OUTPUTS = (ROOT / "src/vllm_remedy/vllm/data/vllm_registry.json",
           ROOT / "src/vllm_remedy/sim/vllm_pod/vllm_registry.json")
_SKIPPED = ("_PREVIOUSLY_SUPPORTED_MODELS", "_OOT_SUPPORTED_MODELS", "_OOT_MODELS")

Version = tuple[int, ...]


def parse(release: str) -> Version:
    """``0.10.1`` -> (0, 10, 1)."""
    return tuple(int(p) for p in release.split("."))


def _registry_file(pkg: Path) -> Path:
    new = pkg / "model_executor/models/registry.py"
    return new if new.exists() else pkg / "model_executor/models/__init__.py"


def architectures(pkg: Path) -> list[str]:
    """The registered architecture names of the release whose ``vllm/`` package is ``pkg``, in source order."""
    tree = ast.parse(_registry_file(pkg).read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict):
            continue
        name = target.id
        if not name.endswith("_MODELS") or name in _SKIPPED or name.startswith("_ROCM"):
            continue
        for key in value.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in names:
                names.append(key.value)
    return names


def previously_supported(pkg: Path) -> dict[str, str]:
    """``_PREVIOUSLY_SUPPORTED_MODELS``: architecture -> the last release that ran it (named in the refusal)."""
    tree = ast.parse(_registry_file(pkg).read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "_PREVIOUSLY_SUPPORTED_MODELS" and isinstance(node.value, ast.Dict)):
            return {k.value: v.value for k, v in zip(node.value.keys, node.value.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
    return {}


def quantization_methods(pkg: Path) -> list[str]:
    """The release's quantization method names, in source order."""
    tree = ast.parse((pkg / "model_executor/layers/quantization/__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == "QuantizationMethods":
            value = node.value
            if isinstance(value, ast.Subscript):  # Literal[...]
                elts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
                return [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == "QUANTIZATION_METHODS":
            elts = node.value.keys if isinstance(node.value, ast.Dict) else getattr(node.value, "elts", [])
            return [k.value for k in elts if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    raise SystemExit(f"no quantization methods found under {pkg}")


def listing(pkg: Path) -> str:
    """How ``_raise_for_unsupported`` prints the names: ``list`` or ``dict_keys``."""
    text = _registry_file(pkg).read_text(encoding="utf-8")
    found = re.search(r"def get_supported_archs\(.*?\n\s+return (list\()?", text)
    return "list" if found is not None and found.group(1) else "dict_keys"


def transformers_fallback(pkg: Path, names: list[str]) -> bool:
    """Whether ``model_impl=auto`` (the default) runs an unregistered architecture with the Transformers backend."""
    utils = pkg / "model_executor/model_loader/utils.py"
    text = utils.read_text(encoding="utf-8") if utils.exists() else ""
    # 0.7.x-0.8.0 name it TransformersModel, in ``_FALLBACK_MODEL`` (not an architecture table)
    backend = "TransformersForCausalLM" in names or '"TransformersModel"' in _registry_file(pkg).read_text("utf-8")
    return backend and bool(re.search(r"ModelImpl\.AUTO|model_impl == \"auto\"", text))


def read(sources: list[Path]) -> dict[str, dict[str, object]]:
    """Every release under ``sources``: its names, methods, listing and fallback."""
    out: dict[str, dict[str, object]] = {}
    found = {d.name: d for root in sources for d in root.glob("src-*") if (d / "vllm").is_dir()}
    dirs = sorted(found.values(), key=lambda d: parse(d.name[4:]))
    for d in dirs:
        pkg = d / "vllm"
        names = architectures(pkg)
        out[d.name[4:]] = {"architectures": names, "quantization": quantization_methods(pkg),
                           "listing": listing(pkg), "fallback": transformers_fallback(pkg, names),
                           "previous": previously_supported(pkg)}
    return out


def _spans(per_release: dict[str, list[str]]) -> dict[str, list[str | None]]:
    """name -> [first, last, first, last, ...]: each run of consecutive read releases with it (a name can leave a
    table and come back: Llama4ForCausalLM is not a text-generation key at 0.8.4), the last ``None`` when the newest
    read release has it."""
    releases = list(per_release)
    spans: dict[str, list[str | None]] = {}
    for name in dict.fromkeys(n for r in releases for n in per_release[r]):
        runs: list[str | None] = []
        for i, r in enumerate(releases):
            inside = name in per_release[r]
            before = i > 0 and name in per_release[releases[i - 1]]
            if inside and not before:
                runs.append(r)
            if inside and (i + 1 == len(releases) or name not in per_release[releases[i + 1]]):
                runs.append(r if i + 1 < len(releases) else None)
        spans[name] = runs
    return spans


def _since(flags: dict[str, bool | str], value: bool | str) -> list[str]:
    return [r for r, f in flags.items() if f == value]


ABOUT = [
    "Generated by scripts/vllm_registry.py from each release's PyPI wheel: the architecture tables of",
    "vllm/model_executor/models/registry.py (models/__init__.py at 0.5.5) and QuantizationMethods /",
    "QUANTIZATION_METHODS of vllm/model_executor/layers/quantization/__init__.py. Do not edit by hand.",
    "architectures, quantization: name: [first release read with it, last read release with it (null: the newest",
    "read has it), and again for each later run of releases that has it].",
    "previously_supported (_PREVIOUSLY_SUPPORTED_MODELS): name: [first release read listing it, the release it names].",
    "A release between two read ones is judged by the nearest read release at or before it.",
]


def table(data: dict[str, dict[str, object]]) -> dict[str, object]:
    """The table both copies hold, from what ``read`` found in each release."""
    releases = list(data)
    archs = _spans({r: list(data[r]["architectures"]) for r in releases})  # type: ignore[arg-type]
    previous: dict[str, list[str]] = {}
    for r in releases:
        for name, last in dict(data[r]["previous"]).items():  # type: ignore[call-overload]
            previous.setdefault(name, [r, str(last)])
    return {
        "about": ABOUT,
        "releases": releases,
        "transformers_fallback": _since({r: bool(data[r]["fallback"]) for r in releases}, True),
        "dict_keys_listing": _since({r: str(data[r]["listing"]) for r in releases}, "dict_keys"),
        "architectures": {n: archs[n] for n in sorted(archs, key=lambda n: (parse(str(archs[n][0])), n))},
        "previously_supported": previous,
        "quantization": _spans({r: list(data[r]["quantization"]) for r in releases}),  # type: ignore[arg-type]
    }


def render(doc: dict[str, object]) -> str:
    """JSON, one name per line so a diff of two generations reads as the names that moved. JSON and not YAML: the
    stdlib parses these 28 kB in ~0.2 ms, where YAML (even libyaml's parser, whose constructors are Python) took
    7-10 ms of every process's first estimate, over the 5 ms an estimate has (bench/bench_memory.py)."""
    parts = []
    for key, value in doc.items():
        if isinstance(value, dict):
            rows = ",\n".join(f"  {json.dumps(n)}: {json.dumps(v)}" for n, v in value.items())
            parts.append(f"{json.dumps(key)}: {{\n{rows}\n}}")
        elif key == "about":
            rows = ",\n".join(f"  {json.dumps(t)}" for t in value)  # type: ignore[attr-defined]
            parts.append(f"{json.dumps(key)}: [\n{rows}\n]")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, required=True, action="append",
                        help="folder of src-<release>/vllm trees (repeatable)")
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = render(table(read(args.sources)))
    if args.check:
        stale = [str(p.relative_to(ROOT)) for p in OUTPUTS if p.read_text(encoding="utf-8") != text]
        for path in stale:
            print(f"{path} differs from the sources", file=sys.stderr)
        return 1 if stale else 0
    for path in OUTPUTS:
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
