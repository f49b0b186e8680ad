"""Show or edit the vLLM server flags in a manifest, preserving how each command line is written.

`show` prints, for every pod template that runs vLLM, the container, entrypoint, model and effective flags
(`-o json`: a VllmServerList, one item per template), and apart from them the bare arguments taken from a variable
(`$(EXTRA)`, `$EXTRA`), which may carry flags nobody here reads. `set` prints the manifest with flags set/unset in
every such template (e.g. LWS leader and worker alike); it never writes the file.

Examples:
  vllm-remedy args show -f deploy.yaml
  kubectl get deploy llama-8b -o yaml | vllm-remedy args show -f - -o json
  vllm-remedy args set -f deploy.yaml --set max-model-len=16384 --unset kv-cache-dtype > fixed.yaml
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from vllm_remedy import yamlfile
from vllm_remedy.envelope import dumps, listing
from vllm_remedy.errors import UserError
from vllm_remedy.vllm import manifest, pod_shape
from vllm_remedy.vllm.cmdline import NoServerError, ServerCommand, canonical_key, find_server, ranges
from vllm_remedy.vllm.cmdline.flags import KNOWN, is_boolean, misspaced
from vllm_remedy.vllm.cmdline.values import parse_float, vllm_int
from vllm_remedy.vllm.manifest_text import ManifestText
from vllm_remedy.vllm.memory.settings import EngineSettings
from vllm_remedy.vllm.versions import version_from_image

NAME = "args"
ORDER = 30
HELP = "show or set vLLM flags in a manifest (Deployment, Pod, StatefulSet, LWS, pod template)"
_PLACEHOLDER = re.compile(r"\$\(|\$\{|\$[A-Za-z_]|\{\{")


def configure(parser: argparse.ArgumentParser) -> None:
    """Two actions sharing -f/--container: `show` reads, `set` prints an edited copy (never writes the file)."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    show = sub.add_parser("show", help="print entrypoint, model, container and effective flags",
                          description="Print, per pod template running vLLM, its entrypoint, model, container "
                                      "and effective flags.")
    edit = sub.add_parser("set", help="print the manifest with flags set/unset",
                          description="Print the manifest with flags set/unset in every vLLM template; every "
                                      "other byte unchanged, the file itself never written.")
    for p in (show, edit):
        p.add_argument("-f", "--file", required=True, metavar="FILE", help="manifest file, or - for stdin")
        p.add_argument("--container", metavar="NAME", help="the vLLM container when several run vLLM")
    show.add_argument("-o", "--output", choices=("text", "json"), default="text")
    edit.add_argument("--set", dest="set", action="append", default=[], metavar="KEY=VALUE",
                      help="set a flag (booleans: true/false); repeatable")
    edit.add_argument("--unset", action="append", default=[], metavar="KEY", help="remove a flag; repeatable")


def _read(path: str) -> str:
    """The file's text exactly (no newline translation), so `set` can hand back every other byte unchanged.

    Reads at most one character past the size limit: an endless or huge input is refused, not swallowed.
    """
    source = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read(4 * yamlfile.MAX_CHARS + 4)
            yamlfile.check_size(len(data) // 4, source)  # 4 bytes at most per character
            text = data.decode("utf-8")
        else:
            with open(path, encoding="utf-8", newline="") as fh:
                text = fh.read(yamlfile.MAX_CHARS + 1)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UserError(f"{source}: cannot read: {reason}") from None
    yamlfile.check_size(len(text), source)
    return text


def _servers(docs: list[Any], source: str, container: str | None) -> list[tuple[int, str, str, dict, ServerCommand]]:
    """(doc index, Kind/name, path, pod spec, server) for every pod spec running vLLM; errors name the template."""
    found = []
    specs_seen = 0
    first_miss: str | None = None
    for i, doc in enumerate(docs):
        for path, spec in manifest.pod_specs(doc):
            specs_seen += 1
            where = f"{source}: {manifest.describe(doc)} {path or '(pod spec)'}"
            try:
                server = find_server(spec, container)
            except NoServerError as exc:
                first_miss = first_miss or f"{where}: {exc}"
                continue
            except UserError as exc:
                raise UserError(f"{where}: {exc}") from None
            if (refused := pod_shape.pod_problem(spec)) is not None:  # the API server refuses it: edit nothing
                raise UserError(f"{where}: {refused}")
            found.append((i, manifest.describe(doc), path, spec, server))
    if not found:
        if not specs_seen:
            raise UserError(f"{source}: no pod spec found (expected a Deployment, Pod, StatefulSet, "
                            "LeaderWorkerSet or pod template with containers)")
        raise UserError(first_miss or f"{source}: no vLLM server found")
    return found


def _pairs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--set {item}: expected KEY=VALUE, e.g. --set max-model-len=16384")
        out[key.strip()] = value
    return out


def _validate(changes: dict[str, str], servers: list[ServerCommand]) -> None:
    """Refuse unknown flag names and values vLLM would reject, as `estimate` does, before anything is printed:
    the memory flags typed by ``EngineSettings`` with the release each server's image tag names (``16k`` or ``auto``
    on a v0.8.3 image is refused naming 0.8.3), every port and count by ``cmdline.ranges``.

    A flag vLLM does not know is accepted only when the command already has it (wrapper programs' own flags);
    `$(VAR)`, `${VAR}` and `{{ .X }}` values are the cluster's to fill in, so they are not judged.
    """
    for key, value in changes.items():
        name = canonical_key(key)
        present = any(o.name == name for s in servers for o in s.options)
        if name not in KNOWN and "." not in name and name != "model" and not present:
            raise UserError(f"--set {key}: not a vLLM serve flag (e.g. max-model-len, gpu-memory-utilization)")
        if _PLACEHOLDER.search(value) or is_boolean(name):  # booleans: the edit itself takes only true/false
            continue
        if not value.strip():
            raise UserError(f"--set {key}: needs a value")
        spaced = ranges.spacing(value)
        if spaced is not None:
            raise UserError(f"--set {key}={value}: {name}: {spaced}")
        for version in dict.fromkeys(version_from_image(s.image) for s in servers):  # each image's own parser
            try:
                EngineSettings.from_flags({name: value}, version)
            except UserError as exc:
                raise UserError(f"--set {key}={value}: {exc}") from None
        wrong = ranges.check(name, value.strip())  # ports, counts, sizes: the flags EngineSettings does not type
        if wrong is not None:
            raise UserError(f"--set {key}={value}: {name}: {wrong}")


def _unspaced(key: str, value: str) -> str:
    """A number with spaces around it (``--set max-model-len= 16384``), written without them: vLLM's ``int``,
    ``float`` and ``human_readable_int`` types strip them, so it is the same number. Any other value keeps its
    spaces, which vLLM keeps too (a name, a path), and ``_validate`` refuses them as a likely slip."""
    text, name = value.strip(), canonical_key(key)
    numeric = vllm_int(text, name) is not None or parse_float(text) is not None
    return text if numeric and text and not _PLACEHOLDER.search(value) and not is_boolean(name) else value


def run(args: argparse.Namespace) -> int:
    """Show or set; every edit is validated before any output, so bad input prints nothing but the error."""
    source = "<stdin>" if args.file == "-" else args.file
    stream = ManifestText(_read(args.file), source)
    servers = _servers(stream.documents, source, args.container)
    if args.action == "show":
        return _show(servers, args.output)
    changes = {key: _unspaced(key, value) for key, value in _pairs(args.set).items()}
    _validate(changes, [server for *_rest, server in servers])
    edited = [(spec, server, server.edit(set=changes, unset=args.unset, drop=_misspaced(server, changes, args.unset)))
              for _i, _w, _p, spec, server in servers]
    for spec, server, new in edited:  # all edits validated first: a bad key changes nothing
        live = _live_container(spec, server.container_name)
        for key in ("command", "args"):
            if new.get(key) != live.get(key):
                stream.set_list(live, key, new[key])
    sys.stdout.write(stream.render())
    return 0


def _misspaced(server: ServerCommand, changes: dict[str, str], unset: list[str]) -> list[str]:
    """The one-item ``"--max-model-len 16384"`` words of the flags being set or unset: argparse reads each as a
    positional (refused, or taken as the model tag), so the edit removes it instead of writing the flag beside it."""
    names = {canonical_key(k) for k in [*changes, *unset]}
    return [t.value for t in server.positionals if misspaced(t.value) in names]


def _live_container(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """The container dict inside ``spec`` (not ServerCommand's copy), so the text rewriter can place it."""
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict) and c.get("name") == name:
                return c
    raise UserError(f"container {name}: vanished from its pod spec")


def _show(servers: list[tuple[int, str, str, dict, ServerCommand]], output: str) -> int:
    rows = [
        {"document": i, "object": what, "path": path, "container": s.container_name, "image": s.image,
         "entrypoint": s.entrypoint, "model": s.model, "flags": s.flags, "from_variables": list(s.hidden)}
        for i, what, path, _spec, s in servers
    ]
    if output == "json":
        print(dumps(listing("VllmServerList", rows)))
        return 0
    for n, row in enumerate(rows):
        if n:
            print()
        print(f"{row['object']} {row['path'] or '(pod spec)'}")
        for key in ("container", "image", "entrypoint", "model"):
            print(f"  {key}: {row[key] if row[key] is not None else '-'}")
        print("  flags:" if row["flags"] else "  flags: (none)")
        for key, value in row["flags"].items():
            print(f"    {key}: {value}")
        if row["from_variables"]:
            print(f"  arguments from variables (not read; they may carry flags): {' '.join(row['from_variables'])}")
    return 0
