"""Drift before it is merged: the vLLM workloads of manifest files against the memory model and their policy (pure).

`vllm-remedy check` runs in CI on a GitOps repository, so the runbook's bad revision (no ``--max-model-len``
on a 24 GB card) fails the merge request instead of paging someone. It applies the scheduled drift check's own
rules (``drift/checks.py``: explicit max-model-len, flag bounds, known-good unit, GPU pinned, no permanent
eager mode, concurrency ≥ peak) plus the start prediction, and asks the step-4 planner for the smallest fix.

Every vLLM container of every pod spec is one :class:`Workload`; containers that do not run vLLM (sidecars,
Services, ConfigMaps, a Helm chart's other objects) are not workloads and are ignored. A workload that cannot
be predicted (no GPU named, a model outside the catalog, flags not in argv) gets an ``unknown`` finding: it
fails the check like an error, because "not proven to start" must never read as "passes".

A LeaderWorkerSet is one engine over its group, sized as the LWS deploys size it: the leader's vLLM flags with
pipeline stages counted as tensor-parallel ranks (``vllm.parallel.group_flags``), its prediction line with the
split the deploys print, workers that disagree with the leader on a memory flag reported, and no fix that changes
the group's shape (a new ``--tensor-parallel-size``: GPUs per pod and ``size``), which the LWS budget skips too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from vllm_remedy import hub
from vllm_remedy.drift import unknown_words
from vllm_remedy.drift.checks import (
    DRIFT,
    UNKNOWN,
    Check,
    Observed,
    check_concurrency,
    check_enforce_eager,
    check_flag_bounds,
    check_gpu_pinned,
    check_known_good_unit,
)
from vllm_remedy.drift.manifest_fix import describe_fix, plan_fix
from vllm_remedy.drift.manifest_workloads import Workload, model_id
from vllm_remedy.drift.release_default import check_default_utilization
from vllm_remedy.drift.start_reason import start_reason
from vllm_remedy.drift.unseen_flag import max_model_len
from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, read_toggles
from vllm_remedy.kube.gpus import pod_gpu_request
from vllm_remedy.kube.lws_history import flag_disagreement, world_size_shortfall
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.budget import policy_gpu, spelling
from vllm_remedy.remedies.pin_gpu import gpu_quantity
from vllm_remedy.remedies.plan import Step
from vllm_remedy.remedies.predict import (
    Prediction,
    before_world_size,
    config_refusal,
    failed_prediction,
    pinned_gpu,
    rules_note,
)
from vllm_remedy.vllm import (
    catalog,
    engine_env,
    gpu_catalog,
    hf_overrides,
    hf_received,
    kv_auto,
    kv_auto_fix,
    manifest_flags_file,
    model_len,
    pod_shape,
    resolved,
)
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.cmdline import ServerCommand, refused
from vllm_remedy.vllm.memory import EngineSettings, estimate
from vllm_remedy.vllm.memory.config_values import ConfigRefused
from vllm_remedy.vllm.memory.unmodelled import CannotPredict
from vllm_remedy.vllm.parallel import group_flags, layout_fix, pod_shortfall, world_size
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, rules, version_from_image

ERROR, UNKNOWN_SEVERITY = "error", "unknown"
_MEMORY_CHECKS = frozenset({"start", "max-model-len", "flag-bounds", "concurrency", "gpu-pinned"})
# What to do when the planner cannot size the fix (no model or GPU to predict with).
_WITHOUT_PLAN = {"max-model-len": "set --max-model-len explicitly (name the GPU and model to get a predicted value)",
                 "flag-bounds": "bring the flag within the policy's bounds, as a literal value"}


@dataclass(frozen=True)
class Finding:
    """Why a workload fails: the rule (``check``), ``error`` or ``unknown``, the reason, what to change."""

    check: str
    severity: str
    reason: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "severity": self.severity, "reason": self.reason, "fix": self.fix}


@dataclass(frozen=True)
class Result:
    """One workload's verdict: the prediction it rests on, its findings and the planner's smallest fix."""

    workload: Workload
    policy: str
    prediction: Prediction | None
    findings: tuple[Finding, ...] = ()
    fix: Step | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {**self.workload.to_json(), "policy": self.policy, "status": "pass" if self.ok else "fail",
                "prediction": self.prediction.to_json() if self.prediction else None,
                "findings": [f.to_json() for f in self.findings],
                "fix": self.fix.to_json() if self.fix else None, "notes": list(self.notes)}


def _unknown(check: str, reason: str, fix: str) -> Finding:
    return Finding(check, UNKNOWN_SEVERITY, unknown_words.reason(reason), fix)


def check_workload(workload: Workload, policy: Policy, now: float) -> Result:
    """The drift rules, the start prediction and, when anything fails, the planner's smallest fix."""
    name = policy.name or str(policy.source)
    server = workload.server
    if (refused := pod_shape.pod_problem(workload.spec)) is not None:  # the API server refuses it: no pod ever runs
        return Result(workload, name, None, (Finding("manifest", ERROR, refused, (
            "write command/args as lists of quoted strings and env as {name, value} entries with string values, "
            "as Kubernetes requires")),))
    if server is None:
        return Result(workload, name, None, (_unknown("command", workload.problem or "no vLLM command", (
            "put the vLLM server's flags in the container's command/args, where they can be read and checked")),))
    # vLLM's --config file, when a ConfigMap checked with it is mounted there: its flags under argv's
    if (read := manifest_flags_file.merged(server, workload.spec, workload.config_maps)) is not server:
        workload = replace(workload, server=read)
        server = read
    spec, notes = workload.spec, []
    pinned = pinned_gpu(spec)
    label = pinned or policy.gpu_product
    model_name = model_id(server)
    version = version_from_image(server.image)
    if version is None:
        notes.append(f"image {server.image} names no vLLM version; the newest rules are used")
    elif rules_note(version):
        notes.append(f"image {server.image}: {rules_note(version)}")
    group = workload.group
    prediction, model, card, settings, unknown = _predict(server, model_name, label, version, policy,
                                                          group is not None, workload.config_maps)
    if not prediction.rules:  # an image's rules are said with or without an estimate (JSON: not "modelled" for 0.35)
        prediction = replace(prediction, rules=rules_note(version))
    observed = Observed(server.image, model_name, server.flags.get("revision"), dict(server.flags), pinned,
                        pod_gpu_request(spec), tuple(read_toggles(Keys(policy.annotation_prefix),
                                                                  workload.metadata.get("annotations") or {})))
    checks: list[Check] = [max_model_len(policy, server), check_flag_bounds(policy, server),
                           check_known_good_unit(policy, observed), check_gpu_pinned(policy, observed),
                           check_enforce_eager(observed, now, policy.enforce_eager.max_duration.total_seconds()),
                           check_default_utilization(policy, server, settings)]
    # vLLM stops at argument parsing (exit 2): no engine starts, so no start or concurrency prediction is shown
    parsing = [f.reason for f in unknown if f.check == "flags" and f.severity == ERROR]
    if parsing:  # its figures are the planned reading's, which the fix plans with: none is the pod's own
        prediction = Prediction(prediction.gpu, None, "; ".join(parsing), rules=prediction.rules, refused=True)
    short = None if group is not None or parsing else pod_shortfall(server.flags, server.container, server.image,
                                                                     policy.gpu.resource)
    layout = None if short is None or before_world_size(prediction, version) else short
    if short is not None and layout is None:  # vLLM prints an earlier refusal; the world size would refuse next
        notes.append(f"then, that fixed: {short}")
    if layout is not None:  # vLLM stops before sizing any memory: no KV or concurrency figure is the pod's
        prediction = Prediction(prediction.gpu, None, layout, rules=prediction.rules)
    failed = failed_prediction(prediction) if prediction.estimate else None
    if prediction.estimate is not None and failed is None:
        checks.append(check_concurrency(policy, prediction))
    refusal = model_len.refusal(model, settings) if model is not None and settings is not None else None
    findings = [Finding("start", ERROR, start_reason(prediction, failed, refusal), "")] if failed else []
    findings += [Finding(c.name, ERROR if c.status == DRIFT else UNKNOWN_SEVERITY, c.detail, "")
                 for c in checks if c.status in (DRIFT, UNKNOWN)]
    findings += unknown
    if model is not None and settings is not None and (kv := _auto_fp8_forbidden(policy, model, card, settings)):
        findings.append(Finding("kv-cache-dtype", ERROR, *kv))
    if layout is not None:
        findings = [f for f in findings if f.check != "start"] + [Finding("start", ERROR, layout,
                                                                          layout_fix(policy.gpu.resource))]
    if group is not None:
        findings += _group_findings(group, workload.container)
        short = _shortfall(group, workload.container, policy.gpu.resource)
        if short is not None:  # vLLM refuses this at config time, before any memory is sized
            findings = [f for f in findings if f.check != "start"] + [Finding("start", ERROR, short, _LAYOUT_FIX)]
            notes.append(f"predicted to fail: {short}")
        else:
            size = int(group.get("size", 1) or 1)
            notes.append(f"{prediction.line()} (TP × PP = {world_size(server.flags)} GPUs over {size} pods)")
    fix: Step | None = None
    plan_note = ""
    pods = int(group.get("size", 1) or 1) if group is not None else 1
    # not with a layout the pod cannot hold: the planner would size a fix on GPUs the pod does not get
    if findings and model is not None and card is not None and settings is not None and short is None:
        respelled = _respelled(server, group is not None, version)[1]
        fix, plan_note = plan_fix(model, card, settings, policy, spec, pinned, group is not None, respelled, pods)
    tp = gpu_quantity(server.flags.get("tensor-parallel-size", "1")) or 1  # a group spans its pods' GPUs
    findings = [_with_fix(f, fix, plan_note, policy, pinned, tp, pods) for f in findings]
    if model_name and (fell_back := hub.fallback_note(hf_overrides.config_source(server.flags, model_name) or "",
                                                      server.flags.get("revision"))):
        notes.append(f"model {model_name}: config.json from {fell_back}")  # not the Hub's: said beside the figures
    if pinned is None and policy.gpu_product and prediction.estimate is not None:
        notes.append(f"the template pins no GPU product: predicted on the policy's {policy.gpu_product}")
    return Result(workload, name, prediction, tuple(findings), fix, tuple(notes))


def _auto_fp8_forbidden(policy: Policy, model: ModelSpec, card: GpuSpec | None,
                        settings: EngineSettings) -> tuple[str, str] | None:
    """(reason, fix) when the policy's kv_cache_fp8 rule, judged on the cache dtype vLLM runs, is broken: ``auto`` on
    a ModelOpt checkpoint with an FP8 KV scheme is fp8_e4m3 from 0.14.0 (``kv_auto``). The fix is the planner's
    (a typed 16-bit dtype) where the release and the policy's flag bounds take one ("" here), else said."""
    if policy.kv_cache_fp8.allowed:
        return None
    v = rules(settings.version).version
    said = kv_auto.note(settings.kv_cache_dtype, model.kv_quant, v)
    if said is None:
        return None
    typed = kv_auto_fix.sixteen_bit_for(model, settings.dtype, card.capability if card else None, settings.version)
    allowed = policy.flags.kv_cache_dtype
    fix = ("" if typed is not None and (allowed is None or typed in allowed.allowed) else
           f"type --kv-cache-dtype {typed} (a typed dtype is not resolved) and allow it in the policy's "
           "flags.kv-cache-dtype, or allow an fp8 KV cache (kv_cache_fp8) after an evaluation" if typed else
           "no --kv-cache-dtype of this release keeps a 16-bit cache: allow an fp8 KV cache (kv_cache_fp8) after an "
           "evaluation, or serve a checkpoint without an FP8 KV-cache scheme")
    return f"{said}; the policy forbids an fp8 KV cache (kv_cache_fp8)", fix


_LAYOUT_FIX = ("make --tensor-parallel-size × --pipeline-parallel-size at most size × GPUs per pod (raise size or "
               "the GPUs per pod, or lower a split); vLLM refuses the start with 'World size (N) is larger than the "
               "number of available GPUs (M)'")


def _shortfall(group: Mapping[str, Any], container: str, resource: str) -> str | None:
    """``kube.lws_history.world_size_shortfall``, None when the leader cannot be read (reported elsewhere)."""
    try:
        return world_size_shortfall(group, container, resource)
    except UserError:
        return None


def _group_findings(group: Mapping[str, Any], container: str) -> list[Finding]:
    """Leader and workers describing different engines: the LWS deploys refuse to remediate such a set."""
    try:
        why = flag_disagreement(group, container)
    except UserError as exc:
        why = str(exc)
    fix = ("make the workers' vLLM flags match the leader's (or let workers only join its Ray cluster); the LWS "
           "deploys refuse to remediate until they agree")
    return [Finding("leader-worker", ERROR, why, fix)] if why else []


def _respelled(server: ServerCommand, group: bool, version: str | None
               ) -> tuple[dict[str, str], list[spelling.Respelled]]:
    """The flags to predict with and each value vLLM refuses at argument parsing: a refused spelling (planned as
    the literal it means) and a refused overridden occurrence (argparse types every one; planned with the kept
    value, which the fix writes once)."""
    flags, found = spelling.respell(group_flags(server.flags) if group else dict(server.flags), version)
    found += spelling.overridden(server, spelling.respell(dict(server.flags), version)[0], version)
    dropped = {r.flag for r in found if r.unknown}  # planned without them (``fp9``, a missing value), as the fix writes
    return {k: v for k, v in flags.items() if k not in dropped}, found


def _not_looked_up(model_name: str, revision: str | None) -> str:
    """Why a model that was never resolved has no spec: ``resolved.model``'s line (not in the catalog at that
    revision, nor resolved this run) rather than a blanket "not in the catalog"."""
    try:
        resolved.model(model_name, revision)
    except UserError as exc:
        return str(exc)
    return f"model {model_name} is not in the catalog"


def _predict(server: ServerCommand, model_name: str | None, label: str | None, version: str | None, policy: Policy,
             group: bool = False, maps: Mapping[str, Mapping[str, str]] | None = None
             ) -> tuple[Prediction, ModelSpec | None, GpuSpec | None, EngineSettings | None, list[Finding]]:
    """(prediction, model, GPU, settings, unknown findings): what can be known, and why the rest cannot. A ``group``
    (an LWS leader) is sized as the LWS deploys size it: TP × PP ranks, each holding its share."""
    card = catalog.find_gpu(label) if label else None
    # a value the release's parser refuses (16Ki, auto before 0.14, anywhere it occurs): the start is refused (exit
    # 2); predicted and planned as the literal it means, which the fix writes (remedies.budget.spelling)
    flags, respelled = _respelled(server, group, version)
    # an --hf-overrides / --hf-config-path argparse refuses is planned unset: sized on the checkpoint's own config
    unset = spelling.unset_config_flags(respelled)
    received, known = hf_received.received(server, maps, version)  # a $(VAR) from a ConfigMap checked with it: expanded
    hf = {k: v for k, v in received.items() if k not in unset}
    named, model_name = model_name, hf_overrides.config_source(hf, model_name)  # --hf-config-path first
    try:
        model = resolved.model(model_name, server.flags.get("revision")) if model_name else None
    except UserError as exc:
        model, why = None, str(exc) if resolved.known(model_name or "", server.flags.get("revision")) else ""
        why = f"--hf-config-path {model_name}: {why or exc}" if model_name != named else why
    if model is not None and model_name:  # --hf-overrides: applied before vLLM derives anything from the config
        try:
            model = hf_overrides.applied(model, model_name, server.flags.get("revision"), hf,
                                         parse_version(version) or NEWEST_RELEASE, hf_overrides.FLAG in known)
        except UserError as exc:
            model, why = None, str(exc)
    out: list[Finding] = []
    if label is None:
        out.append(_unknown("gpu", "no GPU named (no nodeSelector or required node affinity on a GPU product "
                            f"label, and policy {policy.name or policy.source} names no gpu.products)",
                            f"pin the GPU: nodeSelector {policy.gpu.label}: <product>, or gpu.products in the policy"))
    elif card is None:
        out.append(_unknown("gpu", f"GPU {label} is not in the catalog", "pin a GPU product the catalog knows "
                            f"(e.g. {', '.join(gpu_catalog.gpu_labels()[:4])}) or add it to the GPU catalog"))
    learned = resolved.known(model_name or "", server.flags.get("revision"))
    if model is None and isinstance(learned, hub.Reason) and learned.unavailable:  # the Hub's own "no": vLLM's too
        out.append(Finding("start", ERROR, f"predicted model_unavailable — {learned}", "fix the model id, revision "
                           "or the pod's HF_TOKEN: vLLM cannot get the model's config.json"))
    elif model is None:
        if model_name:
            out.append(_unknown("model", why or str(_not_looked_up(model_name, server.flags.get("revision"))),
                                "override the config with sizes of a model vLLM builds (the reason names the key)"
                                if why.startswith("--hf-overrides: ") else
                                "override only config keys the memory model reads (the reason names the others)"
                                if why.startswith("--hf-overrides") else
                                unknown_words.NOT_MODELLED_FIX if unknown_words.not_modelled(why) else
                                "make its config.json reachable (HF_ENDPOINT / HF_TOKEN, or the policy's "
                                "model_config) or add the model to the catalog (vllm/data)" if why else
                                "add the model to the catalog (vllm/data) so its memory can be predicted"))
        elif (tag := refused.ignored_model_tag(server, v := parse_version(version) or NEWEST_RELEASE)) is not None:
            out.append(_unknown("model", f"the api_server module parses the positional {tag} and ignores it (only "
                                f"vllm serve takes its model from it): vLLM {'.'.join(map(str, v))} loads its "
                                f"default model {refused.default_model(v)}", f"pass the model as --model {tag}"))
        elif (path := server.flags.get(manifest_flags_file.FLAG)) is not None:  # vLLM may read it from the file
            out.append(_unknown("model", f"the vLLM command names no model in argv, and its --config file {path} (not "
                                "read here) may name it", "check it with the file's ConfigMap mounted there among the "
                                "files checked, or name the model in argv"))
        else:
            out.append(_unknown("model", "the vLLM command names no model",
                                "name the model in argv (positional or --model), where it can be checked"))
    settings: EngineSettings | None = None
    out += [Finding("flags", ERROR, r.refusal, r.advice or "") for r in respelled]
    try:
        settings = EngineSettings.from_flags(flags, version, engine_env.env_inputs(server.container, maps),
                                             server.hidden)
    except ConfigRefused as exc:  # a literal vLLM's config classes refuse: the start fails, in their words
        out.append(Finding("start", ERROR, f"predicted config_refused — {exc.phrase}", "write a value this vLLM "
                           "release accepts (the reason quotes its check)"))
        return (Prediction(card.product if card else label, None, exc.phrase, config_refused=True), model, card, None,
                out)
    except UserError as exc:  # a placeholder cannot be typed; a literal the release refuses needs its spelling
        out.append(_unknown("flags", str(exc), "spell the value as this vLLM release reads it (the reason says how)"
                            if " refuses " in str(exc) else "write a positive value: the memory model does not size "
                            "this one, and what this vLLM release does with it was not read"
                            if "must be a positive" in str(exc) else "write the memory flags as literal values"))
    env_why = model_len.unknown(model, server.container, settings, maps) if model and settings else None
    if env_why is not None:  # the refusal hangs on a value this tool cannot see: unknown, not a refusal and a fix
        out.append(_unknown("max-model-len-env", env_why, f"set {model_len.ENV} as a literal value in the "
                            "container's env, or check the manifests together with the ConfigMap it comes from"))
        return Prediction(card.product if card else label, None, env_why), model, card, None, out
    if card is None or model is None or settings is None:
        why = "; ".join(f.reason.removeprefix("cannot predict: ") for f in out)
        return Prediction(card.product if card else label, None, why), model, card, settings, out
    try:
        est = estimate(model, card, settings)
        note = "; ".join(n for n in (*(r.note() for r in respelled), config_refusal(model, card, settings, est)) if n)
        return Prediction(card.product, est, note, rules=rules_note(version)), model, card, settings, out
    except CannotPredict as exc:  # a valid start the memory model does not size (LoRA, speculative decoding)
        if str(exc).startswith("cannot predict VLLM_"):  # the engine hangs on the env (engine_env, sampler_env)
            name = str(exc).removeprefix("cannot predict ").split(":")[0].split("=")[0]
            out.append(_unknown("engine-env", str(exc).removeprefix("cannot predict "), f"set {name} as a literal 0 "
                                "or 1 the release takes in the container's env, or unset it"))
            return Prediction(card.product, None, str(exc)), model, card, None, out
        hidden = "an argument taken from a variable" in str(exc)  # unmodelled.unmodelled's hidden-argument reason
        fix = ("write those arguments out in args, or check the manifests together with the ConfigMap that sets the "
               "variable" if hidden else
               "the memory model does not size this feature: confirm the start on one pod (or a test node) before "
               "rolling it out")
        out.append(_unknown("flags", str(exc).removeprefix("cannot predict "), fix))
        return Prediction(card.product, None, str(exc)), model, card, None, out
    except UserError as exc:
        out.append(_unknown("flags", str(exc), unknown_words.fix(str(exc), "fix the flag vLLM would reject")))
        return Prediction(card.product, None, str(exc)), model, card, None, out


def _with_fix(finding: Finding, step: Step | None, plan_note: str, policy: Policy, pinned: str | None,
              tp: int = 1, pods: int = 1) -> Finding:
    """Memory findings get the planner's step; the others the rule's own remedy (a GPU pin: on the product the pod
    pins when the policy allows it, as the pin deploy pins it: ``policy_gpu.product``; the planner's step, which
    sets the TP size with the count, when the pin alone would strand TP ranks: ``policy_gpu.pin_strands_ranks``)."""
    if finding.fix:
        return finding
    strands = finding.check == "gpu-pinned" and policy_gpu.pin_strands_ranks(tp, policy.gpu.per_pod * pods)
    if strands:  # as the budget deploy's pin step leaves it to the budget step
        fix = describe_fix(step) if step else (plan_note or "bring --tensor-parallel-size within the policy's "
                                                "GPUs per pod (gpu.per_pod) with the GPU count: plan --policy")
    elif finding.check == "gpu-pinned" and policy.gpu.products and (step is None or not step.template.node_selector):
        fix = (f"nodeSelector {policy.gpu.label}: {policy_gpu.product(policy, pinned)} with limits "
               f"{policy.gpu.resource}: {policy.gpu.per_pod}")
    elif finding.check in _MEMORY_CHECKS:
        fix = describe_fix(step) if step else (plan_note or _WITHOUT_PLAN.get(finding.check, "see the reason"))
    elif finding.check == "known-good-unit":
        fix = "use one of the policy's known-good units, or add this unit to known_good once tested on this GPU"
    elif finding.check == "enforce-eager":
        fix = "remove --enforce-eager; in an incident use the timed toggle (deploys/enforce_eager.py)"
    else:
        fix = describe_fix(step) if step else "see the reason"
    return Finding(finding.check, finding.severity, finding.reason, fix)
