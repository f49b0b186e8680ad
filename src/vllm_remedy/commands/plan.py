"""Runbook step 4: the smallest changes predicted to restore headroom, as a ladder (smallest first).

Examples:
  vllm-remedy plan --model meta-llama/Llama-3.1-8B-Instruct --gpu NVIDIA-L4 --vllm-version 0.8.5
  vllm-remedy plan -f deployment.yaml --policy policies/llama-8b.yaml --log previous.log -o json

Exit codes (a script can test the verdict):
  0 no change needed: the current settings are predicted to fit with headroom
  1 a change is proposed, or nothing fits, or the failure is outside the GPU budget
  2 bad input
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vllm_remedy import hub
from vllm_remedy.commands import _engine_args as ea
from vllm_remedy.commands import _hf_config_mount, _hf_flags, _plan_policy
from vllm_remedy.commands._plan_render import render
from vllm_remedy.commands.estimate import echo_inputs
from vllm_remedy.connectors.models import policy_config
from vllm_remedy.envelope import dumps, envelope
from vllm_remedy.errors import UserError
from vllm_remedy.hub import pod as hub_pod
from vllm_remedy.kube.gpus import affinity_products
from vllm_remedy.remedies.budget import BudgetRequest, plan_budget, spelling
from vllm_remedy.remedies.budget.observed import KvObservation
from vllm_remedy.remedies.budget.policy_gpu import plan_within_policy
from vllm_remedy.remedies.plan import Plan
from vllm_remedy.remedies.predict import pinned_gpu
from vllm_remedy.vllm import (
    catalog,
    engine_env,
    hf_received,
    kserve,
    manifest,
    manifest_flags_file,
    model_len,
    pod_env,
    pod_shape,
    received_flags,
)
from vllm_remedy.vllm.catalog import PRODUCT_LABELS
from vllm_remedy.vllm.cmdline import NoServerError, ServerCommand, find_server, unrecognized
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.parallel import gpu_shortfall, layout_fix
from vllm_remedy.vllm.versions import EXTENSIBLE_KV_CACHE_SINCE, parse_version, rules, version_from_image

# custom all-reduce's warning when the driver reports no peer access between the TP GPUs (distributed/
# device_communicators/custom_all_reduce.py@v0.10.1.1 to @v0.27.1; see EngineSettings.p2p), matched with whitespace
# removed: saved logs are often hard-wrapped, mid-word too.
_NO_P2P = "CustomallreduceisdisabledbecauseyourplatformlacksGPUP2Pcapability"
NAME = "plan"
ORDER = 50
HELP = "ladder of the smallest flag/GPU changes predicted to make vLLM fit again (runbook step 4)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--file", metavar="FILE", help="manifest with the vLLM Deployment (or - for stdin)")
    parser.add_argument("--container", metavar="NAME", help="the vLLM container when several run vLLM")
    ea.add_model_gpu(parser, required=False)
    ea.add_engine_flags(parser, with_defaults=False)
    parser.add_argument("--target-concurrency", metavar="N", type=float,
                        help="peak concurrent requests to cover (default: the policy's peak_concurrency, else 8)")
    parser.add_argument("--node-gpus", metavar="N", type=int, help="GPUs per node (caps tensor-parallel-size)")
    parser.add_argument("--policy", metavar="P", help="policy file, or with -f a directory (the policy whose target "
                        "names the workload most narrowly, as check picks it): its bounds, GPU products and GPUs per "
                        "pod hold every rung, planned on its GPU when the pod's is not one it allows, as check's fix "
                        "and deploys/budget.py (default: no policy: the built-in default bounds, the pod's GPU, any "
                        "bigger card and TP up to 8)")
    failure = parser.add_mutually_exclusive_group()
    failure.add_argument("--failure", choices=[f.value for f in Failure], help="the failure the log showed")
    failure.add_argument("--log", metavar="FILE", help="the failing container's startup log")
    ea.add_output(parser)


@dataclass
class _Inputs:
    model_id: str | None = None
    version: str | None = None
    flags: dict[str, str] = field(default_factory=dict)
    gpu_label: str | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: the memory model's inputs the pod's env gives (VLLM_ALLOW_LONG_MAX_MODEL_LEN), as check and drift read them
    inputs: dict[str, str] = field(default_factory=dict)
    container: Mapping[str, Any] = field(default_factory=dict)
    config_maps: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    server: ServerCommand | None = None  # the manifest's server, whose every flag occurrence vLLM types
    namespace: str = "default"  # the workload's, where the policy's model_config ConfigMap is looked up
    name: str = ""  # the workload's, and its labels: which policy of a directory covers it (as check picks it)
    labels: Mapping[str, str] = field(default_factory=dict)
    mount: hub.Fallback | None = None  # --hf-config-path's config.json from a ConfigMap mounted there (as check)


def run(args: argparse.Namespace) -> int:
    """What was typed wins over what the manifest says (model, GPU, flags); the vLLM version falls back from
    --vllm-version to the image tag to the log's banner."""
    for name in ("target_concurrency", "node_gpus"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UserError(f"--{name.replace('_', '-')}: {value:g} must be > 0")
    found = _from_manifest(args) if args.file else _Inputs()
    if not args.file and not (args.model or args.model_config):
        raise UserError("--model or --model-config is required (or -f MANIFEST)")
    policy = _plan_policy.load(args.policy, found.namespace, found.name, found.model_id, found.labels,
                               bool(args.file)) if args.policy else None
    # the policy's model_config is the last resort, as check and the deploys use it (a ConfigMap: the manifests')
    fallback = policy_config(None, found.namespace, policy, found.config_maps) if policy is not None else None
    if args.gpu is not None or args.gpu_memory_gib is not None:
        gpu = ea.load_gpu(args)
    elif found.gpu_label:
        gpu = catalog.gpu(found.gpu_label)
    elif args.file and policy is not None and policy.gpu_product:  # check's "else the policy's GPU", pinned in the plan
        gpu = catalog.gpu(policy.gpu_product)
    else:
        where = f"{args.file}: no GPU pinning (nodeSelector or node affinity on {PRODUCT_LABELS[0]}, GKE or " \
                "Karpenter labels); pass --gpu" if args.file else "--gpu or --gpu-memory-gib is required"
        raise UserError(where)
    typed = ea.engine_flags(args)
    inputs = {**found.inputs, **ea.model_inputs(args)}  # what was typed wins over the manifest's env
    failure, observed, version = _observed(args, inputs)
    version = args.vllm_version or found.version or version
    if found.server is not None:  # an option a release past the newest read may have added: said, kept, not judged
        found.notes += [unrecognized.note(w, version) for w in unrecognized.unjudged(found.server, version)]
    if version is None and failure is Failure.FREE_MEMORY_BELOW_UTILIZATION and not rules(None).free_memory_check:
        version = _LAST_FREE_MEMORY_CHECK  # the newest rules cannot fail this way, so the log predates them
        found.notes.append(f"the log names no vLLM version; its free-memory refusal is gone from "
                           f"{EXTENSIBLE_KV_CACHE_SINCE[0]}.{EXTENSIBLE_KV_CACHE_SINCE[1]}, so the rules of "
                           f"{version} are used")
    # a manifest value the release's parser refuses (16Ki, auto before 0.14): planned as the literal it means
    manifest_flags, respelled = spelling.respell({k: v for k, v in found.flags.items() if k not in typed}, version)
    flags = {**manifest_flags, **typed}
    if found.server is not None:  # an overridden occurrence it refuses stops vLLM too: planned with the kept value
        respelled += spelling.overridden(found.server, flags, version, typed)
        flags = spelling.without_refused(flags, respelled)  # argparse stops first: never typed (as predict_template)
    # a manifest's --hf-overrides / --hf-config-path argparse refuses is planned unset: sized without it, as check does
    model, path = _model(args, found, typed, version, fallback, spelling.unset_config_flags(respelled))
    # a literal vLLM's config classes refuse is a predicted config_refused start (check's words): planned unset
    settings, refused, dropped = ea.refusable_settings(flags, version, inputs,
                                                       found.server.hidden if found.server else ())
    ea.check_int32(settings, flags)
    why = model_len.unknown(model, found.container, settings, found.config_maps) if found.container else None
    if why is not None and not args.allow_long_max_model_len:  # the env var's value cannot be read: say so
        found.notes.append(f"{why}; planned as if it is unset (vLLM refuses the length)")
    resource = policy.gpu.resource if policy else "nvidia.com/gpu"
    # argparse stops first (exit 2): a refused spelling is the start's problem, not the GPUs
    layout = None if respelled else _layout(found, flags, version, resource)
    if layout is not None:  # vLLM stops before any stage exists: the figures shown are labelled as not the pod's
        settings = replace(settings, pp=1)
    request = BudgetRequest(
        model=model, gpu=gpu, settings=settings, policy=policy, failure=failure,
        target_concurrency=args.target_concurrency, node_gpus=args.node_gpus, observed=observed,
        node_selector=found.node_selector, gpu_label=found.gpu_label)
    # on the policy's GPU when the card asked about (typed wins, else the pod's pin) is not one it allows; a card
    # given only by its memory is the one asked about
    custom = args.gpu is None and args.gpu_memory_gib is not None
    plan = plan_budget(request) if custom else plan_within_policy(request, args.gpu or found.gpu_label)
    plan = spelling.apply(plan, respelled, version)
    if refused is not None:
        plan = ea.refused_plan(plan, refused, dropped, settings, version)
    if layout is not None:  # vLLM stops before sizing memory: no rung of the ladder fixes the pod's GPU count
        plan = Plan(plan.kind, "outside_gpu_budget", layout, plan.current, (), (*plan.notes, layout_fix(resource)),
                    plan.subject)
    # vLLM's own words for a config-time refusal that is not the batch (the env's VLLM_USE_V1, the quantization)
    elif (said := plan.current.refusal):  # as the estimate decided it (``memory.core``)
        found.notes.insert(0, f"vLLM refuses the start as configured: {said}")
    if found.notes:
        plan = Plan(plan.kind, plan.verdict, plan.problem, plan.current, plan.steps,
                    (*found.notes, *plan.notes), plan.subject)
    if path is not None and (served := args.model or (None if args.model_config else found.model_id)):
        # vLLM serves --model with the config read from --hf-config-path (``estimate.shown_model``)
        plan = replace(plan, subject={**plan.subject, "model": served, "config": f"--hf-config-path {path}"})
    if args.output == "json":
        data = plan.to_json()
        data["subject"] = {**data["subject"], "rules": rules(version).provenance}
        # its inputs as given, as estimate's JSON echoes them: the manifest's flags as written with the typed ones
        # over them, the version as typed (null: none; the manifest's or the log's then) and as every output prints it
        data.update({**echo_inputs(args), "flags": {**found.flags, **typed}, "vllm_version": args.vllm_version,
                     "vllm_version_label": rules(version).label})
        if respelled:  # vLLM stops at argument parsing as written: "current" is the planned reading of it
            data["current"] = {**data["current"], "as_written": Failure.ARGUMENT_REFUSED.value}
        elif layout is not None:  # the figures are a start on GPUs the pod does not get
            data["current"] = {**data["current"], "as_written": Failure.WORLD_SIZE_EXCEEDS_GPUS.value}
        print(dumps(envelope(plan.kind, data)))
    else:
        exit_as_written = getattr(respelled[0].typed, "exit_code", 2) if respelled else 0  # the first refusal's
        print(render(plan, rules(version).label, refused=exit_as_written, layout=layout is not None))
    return exit_code(plan)


def _model(args: argparse.Namespace, found: _Inputs, typed: Mapping[str, str], version: str | None,
           fallback: hub.Fallback | None, unset: Collection[str] = ()) -> tuple[catalog.ModelSpec, str | None]:
    """The config vLLM sizes: the typed model (or config) over the manifest's, read from ``--hf-config-path`` when
    given (typed, or the manifest's for its own model: a path in the pod then), ``--hf-overrides`` applied as
    ``check`` applies a manifest's (``_hf_flags``); typed flags win over the manifest's. ``unset``: the manifest's
    hf flags argparse refuses, which the plan removes, so the config is the checkpoint's own. Also the
    ``--hf-config-path`` the config was read from, or None."""
    # the manifest's as the pod receives them: a $(VAR) a ConfigMap given with -f sets is expanded (hf_received)
    written, known = (hf_received.received(found.server, found.config_maps, version) if found.server
                      else (found.flags, ()))
    hf = {k: v for k, v in {**written, **typed}.items()
          if k in (_hf_flags.FLAG, _hf_flags.PATH_FLAG) and (k in typed or k not in unset)}
    literal = _hf_flags.FLAG in typed or _hf_flags.FLAG in known
    # argparse stops first: nothing is resolved for a flag the release lacks (every typed --hf-overrides judged)
    _hf_flags.refusal(hf, version, _hf_flags.earlier(args) if _hf_flags.FLAG in typed else ())
    path = _hf_flags.config_path(hf) if _hf_flags.PATH_FLAG in typed or not args.model_config else None
    if path is not None and args.model_config:
        raise _hf_flags.path_with_model_config()
    typed_model = bool(args.model or args.model_config)
    revision = args.revision if typed_model else args.revision or found.flags.get("revision")
    if path is not None:
        revision = args.revision or found.flags.get("revision")
        in_pod = _hf_flags.PATH_FLAG not in typed  # the manifest's: a ConfigMap mounted there may hold it
        model = _hf_flags.resolved_path(path, lambda p: hub.resolve(
            p, revision, found.mount or fallback if in_pod else fallback, in_pod=in_pod)[0])
        return _hf_flags.overridden(model, path, revision, hf, version, literal), path
    if args.model and fallback is not None:
        try:
            model = hub.resolve(args.model, args.revision, fallback)[0]
        except UserError as exc:
            raise UserError(f"{exc}; pass --model-config with its config.json") from None
    elif typed_model:
        model = ea.load_model(args)
    elif found.model_id:
        try:
            model = hub.resolve(found.model_id, revision, fallback, in_pod=True,  # with the pod's HF_TOKEN
                                env=hub_pod.sent(hub_pod.from_manifest(found.container, found.config_maps),
                                                 found.server))[0]  # vLLM's --hf-token where the release sends it
        except UserError as exc:
            raise UserError(f"{args.file}: {exc}; pass --model or --model-config with its config.json") from None
    else:
        raise UserError(f"{args.file}: the vLLM command names no model; pass --model or --model-config")
    name = args.model or (str(Path(args.model_config)) if args.model_config else found.model_id)
    return _hf_flags.overridden(model, str(name), revision, hf, version, literal), None


# The newest release whose V1 engine still refuses a start when free memory is below utilization x total.
_LAST_FREE_MEMORY_CHECK = f"{EXTENSIBLE_KV_CACHE_SINCE[0]}.{EXTENSIBLE_KV_CACHE_SINCE[1] - 1}.0"


def _layout(found: _Inputs, flags: Mapping[str, str], version: str | None, resource: str) -> str | None:
    """Why the manifest's pod cannot hold the engine it asks for (``parallel.gpu_shortfall``, on the flags as
    planned: typed ones win), or None; without a manifest the pod's GPUs are not known, so nothing is judged."""
    if found.server is None:
        return None
    try:
        return gpu_shortfall(flags, found.container, resource, parse_version(version) if version else None)
    except UserError:
        return None


def exit_code(plan: Plan) -> int:
    """0 only when nothing needs changing: every other verdict asks a person (or a pipeline) to act."""
    return 0 if plan.verdict == "no_change_needed" else 1


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UserError(f"{path}: cannot read: {reason}") from None


def _observed(args: argparse.Namespace, inputs: dict[str, str]
              ) -> tuple[Failure | None, KvObservation | None, str | None]:
    """(failure, the logged KV cache, logged version) from --failure or --log: the KV cache as tokens, memory or
    vLLM's own estimated maximum length, which the planner scales every candidate by; a free-memory failure in the log
    also tells how much other processes hold (unless --other-gib says), its custom all-reduce line whether the GPUs
    lack P2P (unless --p2p says)."""
    if args.failure:
        return Failure(args.failure), None, None
    if not args.log:
        return None, None, None
    # The log parser and classifier (~15 ms of CPU to import) only for --log: most plans are from a manifest.
    from vllm_remedy.vllm.startup_log import classify, parse_startup_log

    text = _read(args.log)
    report = parse_startup_log(text)
    failure = classify(report)
    detail = report.failure_detail
    if failure is Failure.FREE_MEMORY_BELOW_UTILIZATION and "other-process-gib" not in inputs:
        free, total = detail.get("free_gib"), detail.get("total_gpu_gib") or report.total_gpu_gib
        if isinstance(free, (int, float)) and isinstance(total, (int, float)) and total > free:
            inputs["other-process-gib"] = f"{total - free:.2f}"  # includes our own CUDA context: errs safe
    if report.flashinfer is not None and "flashinfer" not in inputs:  # the sampler line: FlashInfer or the sort
        inputs["flashinfer"] = str(report.flashinfer).lower()
    if "p2p" not in inputs and _NO_P2P in "".join(text.split()):  # the driver's no, which NCCL's P2P transport obeys
        inputs["p2p"] = "false"
    return failure, KvObservation.from_report(report.to_dict()), report.vllm_version


def _from_manifest(args: argparse.Namespace) -> _Inputs:
    source = "<stdin>" if args.file == "-" else args.file
    docs = manifest.load_documents(_read(args.file), source)
    if (bad := next(filter(None, map(pod_env.config_map_problem, docs)), None)) is not None:
        raise UserError(f"{source}: {bad}")  # data the API server refuses: not env to read
    miss: str | None = None
    # a List's items are objects of their own (``kubectl get -o yaml``, ``helm template``): their namespaces count
    docs = [i for d in docs for i in ((d.get("items") or []) if isinstance(d, dict) and d.get("kind") == "List"
                                      else [d])]
    for doc in docs:
        for path, spec in manifest.pod_specs(doc) or kserve.manifest_pod_specs(doc, docs):
            where = f"{source}: {manifest.describe(doc)} {path or '(pod spec)'}"
            try:
                server = find_server(spec, args.container)
            except NoServerError as exc:
                miss = miss or f"{where}: {exc}"
                continue
            except UserError as exc:
                raise UserError(f"{where}: {exc}") from None
            if (refused := pod_shape.pod_problem(spec)) is not None:  # the API server refuses it: no pod runs
                raise UserError(f"{where}: {refused}")
            namespace = str((doc.get("metadata") or {}).get("namespace") or "default") if isinstance(doc, dict) \
                else "default"
            found = _inputs(server, spec, where, pod_env.config_maps(docs, namespace))
            found.namespace = namespace
            found.name, found.labels = _plan_policy.identity(doc)
            return found
    raise UserError(miss or f"{source}: no pod spec found (expected a Deployment, Pod, StatefulSet, "
                    "LeaderWorkerSet, KServe InferenceService or pod template with containers)")


def _env_value(container: Mapping[str, Any], text: str | None) -> str | None:
    """``$(MODEL_ID)`` → the container's literal env value (Kubernetes expands these in args)."""
    match = re.fullmatch(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", text or "")
    if not match:
        return text
    for env in container.get("env") or []:
        if isinstance(env, dict) and env.get("name") == match.group(1) and isinstance(env.get("value"), str):
            return env["value"]
    return text


def _inputs(server: ServerCommand, spec: Mapping[str, Any], where: str,
            maps: Mapping[str, Mapping[str, str]] | None = None) -> _Inputs:
    server = manifest_flags_file.merged(server, spec, maps)  # vLLM's --config file, when a ConfigMap checked has it
    server = received_flags.received(server, maps)  # every flag's $(VAR) those ConfigMaps set, as check reads them
    model = _env_value(server.container, server.model)
    found = _Inputs(model_id=model, version=version_from_image(server.image), flags=dict(server.flags),
                    container=server.container, config_maps=maps or {}, server=server,
                    mount=_hf_config_mount.fallback(server, spec, maps))
    try:  # VLLM_ALLOW_LONG_MAX_MODEL_LEN, VLLM_USE_V1 in vLLM's process, read as check and drift's prediction read them
        found.inputs = engine_env.env_inputs(server.container, maps)
    except UserError as exc:  # an env Kubernetes refuses: no pod ever runs it
        raise UserError(f"{where}: {exc}") from None
    selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
    found.node_selector = {str(k): str(v) for k, v in selector.items()}
    pinned = pinned_gpu(spec)
    choices = affinity_products(spec)
    if pinned is not None and pinned not in found.node_selector.values() and len(choices) > 1:
        found.notes.append(f"{where}: node affinity allows {', '.join(choices)}; planning for the smallest, {pinned}")
    found.gpu_label = pinned
    if found.version is None:
        found.notes.append(f"{where}: image {server.image} names no vLLM version; the newest rules are used")
    return found
