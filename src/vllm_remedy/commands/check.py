"""Check the vLLM workloads of manifest files before they are merged: predicted to start, within their policy.

For CI on GitOps repositories and as a pre-commit hook. Every vLLM container of every pod spec in the
files (multi-document YAML, Lists, Helm or kustomize output on stdin) is predicted on its GPU — the
nodeSelector/affinity GPU product label, else the policy's GPU — and checked against the drift rules of its
policy; each finding names the file, the object, the container, the reason and the planner's smallest fix.
Objects that run no vLLM (Services, ConfigMaps, sidecars) are ignored. A workload that cannot be predicted
(no GPU named, model not in the catalog, flags outside argv) fails as "unknown": unproven is not a pass.
A LeaderWorkerSet is one engine over its group, sized as the LWS deploys size it (TP × PP split, their prediction
line as a note), its workers' flags checked against the leader's, and no fix that changes the group's shape.

Exit codes:
  0 every vLLM workload predicted to start and within policy (or none found)
  1 a workload predicted to crash, violating its policy, or not predictable
  2 bad input: unreadable file, invalid YAML, input over the YAML limits, unknown policy

Examples:
  vllm-remedy check -f deploy/ --policy policies/
  helm template llm charts/vllm | vllm-remedy check -f - --policy policies/llama-8b.yaml
  kustomize build overlays/prod | vllm-remedy check -f - -o junit > vllm-check.xml
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_remedy import hub
from vllm_remedy.commands import _check_render as render
from vllm_remedy.commands import _hf_config_mount as hf_config_mount
from vllm_remedy.connectors.models import policy_config
from vllm_remedy.drift.manifest_check import Result, check_workload
from vllm_remedy.drift.manifest_workloads import Workload, model_id, workloads
from vllm_remedy.envelope import dumps
from vllm_remedy.errors import UserError
from vllm_remedy.hub import pod as hub_pod
from vllm_remedy.policy import DEFAULT_POLICY, Policy, load_policies, load_policy, policy_for
from vllm_remedy.vllm import hf_overrides, manifest, manifest_flags_file, pod_env, received_flags, resolved
from vllm_remedy.vllm.cmdline import unrecognized
from vllm_remedy.vllm.versions import version_from_image

NAME = "check"
ORDER = 55
HELP = "check manifests before merge: vLLM predicted to start and within policy; exit 0 / 1 findings / 2 bad input"
SUFFIXES = (".yaml", ".yml", ".json")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--file", dest="files", metavar="FILE", nargs="*", action="extend", default=[],
                        help="manifest files or directories (recursing over *.yaml, *.yml, *.json); - for stdin")
    # Files after the options too: a pre-commit hook's `entry: vllm-remedy check -f` gets `args` before them.
    parser.add_argument("more", metavar="FILE", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--policy", metavar="P", help="policy file, or a directory (each workload gets the policy "
                        "whose target names it most narrowly); default: the built-in default policy")
    parser.add_argument("-n", "--namespace", default="default",
                        help="namespace of objects that name none (default: default, as kubectl apply)")
    parser.add_argument("-o", "--output", choices=("text", "json", "junit"), default="text")


@dataclass(frozen=True)
class _Policies:
    """One policy for everything, or a directory to pick from per workload."""

    where: str
    single: Policy | None
    many: dict[str, Policy]

    def covering(self, w: Workload) -> Policy:
        if self.single is not None:
            return self.single
        labels = w.metadata.get("labels") if isinstance(w.metadata.get("labels"), dict) else {}
        # the model vLLM serves: argv's, else its --config file's (a ConfigMap checked with it)
        model = model_id(manifest_flags_file.merged(w.server, w.spec, w.config_maps)) if w.server else None
        return policy_for(self.many, self.where, w.namespace, w.name, model, labels)


def _policies(arg: str | None) -> _Policies:
    if arg is None:
        return _Policies("<built-in default policy>", DEFAULT_POLICY, {})
    path = Path(arg)
    if path.is_dir():
        return _Policies(arg, None, load_policies(path))
    if not path.exists():
        raise UserError(f"{arg}: no such policy file or directory")
    return _Policies(arg, load_policy(path), {})


def expand(names: list[str]) -> list[str]:
    """Files in the order given; a directory gives its *.yaml/*.yml/*.json files, sorted, recursively."""
    out: list[str] = []
    for name in names:
        path = Path(name)
        if name != "-" and path.is_dir():
            out += sorted(str(p) for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()
                          and not any(part.startswith(".") for part in p.relative_to(path).parts))
        else:
            out.append(name)
    return out


def read(name: str) -> tuple[str, list[Any]]:
    """(source, documents) of one file or stdin; unreadable, invalid or oversized input is a UserError naming it."""
    if name == "-":
        return "<stdin>", manifest.load_documents(sys.stdin.read(), "<stdin>")
    try:
        with open(name, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UserError(f"{name}: cannot read: {reason}") from None
    return name, manifest.load_documents(text, name)


def run(args: argparse.Namespace) -> int:
    """Everything is read and validated before anything is printed, so bad input gives one line only."""
    if not args.files and not args.more:
        raise UserError("no file to check: -f FILE... (a directory, or - for stdin)")
    policies = _policies(args.policy)
    files = expand([*args.files, *args.more])
    found: list[Workload] = []
    every: list[object] = []
    for name in files:
        source, docs = read(name)
        for doc in docs:  # a ConfigMap the API server refuses is bad input, not a value to read env from
            for item in (doc.get("items") or []) if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]:
                if (why := pod_env.config_map_problem(item)) is not None:
                    raise UserError(f"{source}: {why}")
        every += docs
        found += workloads(docs, source, args.namespace)
    # a variable read from a ConfigMap checked with it, in the workload's namespace, is known
    found = [dataclasses.replace(w, config_maps=pod_env.config_maps(every, w.namespace, args.namespace)) for w in found]
    # and every flag's $(VAR) they set is what vLLM receives (the kubelet expands each argv item)
    found = [dataclasses.replace(w, server=received_flags.received(w.server, w.config_maps)) if w.server else w
             for w in found]
    chosen = [(w, policies.covering(w)) for w in found]
    keys: list[tuple[object, ...] | None] = []  # each workload's environment, its model's answer looked up under
    for w, p in chosen:  # configs outside the catalog (--hf-config-path's first): HF cache, Hub, the policy's file
        # at the revision vLLM loads: argv's, else its --config file's (a ConfigMap checked with it), as predicted
        server = manifest_flags_file.merged(w.server, w.spec, w.config_maps) if w.server is not None else None
        keys.append(None)
        if server is not None and (model := hf_overrides.config_source(server.flags, model_id(server))):
            fallback = (hf_config_mount.fallback(server, w.spec, w.config_maps)  # mounted at --hf-config-path
                        or policy_config(None, w.namespace or "default", p, w.config_maps))  # may be among the files
            # the pod's HF_TOKEN (or its --hf-token where the release sends it), not ours
            env = hub_pod.sent(hub_pod.from_manifest(server.container, w.config_maps), server)
            hub.learn(model, server.flags.get("revision"), fallback, env)
            keys[-1] = hub.answer_key(env, fallback)
    now = time.time()
    results = []
    for (w, p), key in zip(chosen, keys, strict=True):  # every model learned first, each predicted with its own answer
        with resolved.scope(key):
            results.append(_unjudged(w, check_workload(w, p, now)))
    if args.output == "json":
        print(dumps(render.report(results, files)))
    elif args.output == "junit":
        print(render.junit(results))
    else:
        print(render.text(results, len(files)))
    return exit_code(results)


def _unjudged(w: Workload, result: Result) -> Result:
    """``result`` with a note per option a release newer than the newest read may have added (``cmdline.unrecognized
    .unjudged``): neither a finding nor silence, as a rehearsal pod of the image starts with it unmodelled. A note, as
    the image's extrapolated rules are: it does not fail the check (exit 0 when nothing else does), in text, JSON
    ``notes`` and JUnit alike."""
    if w.server is None:
        return result
    server = manifest_flags_file.merged(w.server, w.spec, w.config_maps)  # the --config file's options too
    version = version_from_image(server.image)
    said = [unrecognized.note(words, version) for words in unrecognized.unjudged(server, version)]
    return dataclasses.replace(result, notes=(*result.notes, *said)) if said else result


def exit_code(results: list[Result]) -> int:
    return 0 if all(r.ok for r in results) else 1
