"""The drift checks: one running Deployment against its policy, the runbook's "prevent it next time" (pure).

Each check answers for one rule the scheduled job watches — the names are the ``check`` label of
``vllm_remedy_drift_detected`` and stay stable:

* ``max-model-len``   explicit ``--max-model-len`` (never the model's 128k default)
* ``flag-bounds``     every flag within the policy's bounds (fp8 KV cache only where allowed)
* ``known-good-unit`` image tag + model revision + flags form an allowed known-good unit
* ``gpu-pinned``      the pod pins a GPU product the policy names, with the policy's GPUs per pod
* ``enforce-eager``   ``--enforce-eager`` only as a timed toggle, never past its expiry
* ``concurrency``     predicted to start (``remedies.predict.failed_prediction``, as ``check``), with a maximum
                      concurrency ≥ the policy's peak concurrent requests
* ``model-max-len``   (listed only when it fails) --max-model-len above the model's maximum: vLLM refuses it at
                      config time, before sizing anything (``concurrency`` is then unknown)
* ``prediction``      the memory model can predict the start at all (model and GPU in the catalogs), and vLLM does
                      not refuse it at config time (max-length or dtype refusal: drift, no KV figures)
* ``rollout-pending`` an OnDelete StatefulSet's pods all on the update revision (else what serves is not the template)
* ``crash-loop``      no pod of the current revision crash-looping (``kube/wait.py``'s rule), whatever
                      the other checks say; the classified startup log names the failure class
* ``unschedulable``   (listed only while a pod is unschedulable) not serving nothing with pods Pending past the
                      policy's ``restore.rollout_timeout`` (``drift/unschedulable.py``)
* ``fallback-route``  the policy's gateway fallback route exists and sends the fallback no traffic: load
                      shedding's shift is temporary, a route left shifted is drift
* ``leader-worker-flags`` (LeaderWorkerSet hosts only) the leader and worker templates run one engine: restore's
                      own rule (``kube.lws_history.flag_disagreement``), so drift flags what restore would refuse

A check is ``pass``, ``drift`` or ``unknown`` (it could not be judged, e.g. a model missing from the
catalog). Unknown is not in sync: ``report`` gives such a host the status ``Unknown``, which exits as
drift does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_remedy.drift.pod_layout import layout_verdicts
from vllm_remedy.drift.unschedulable import UNSCHEDULABLE, unschedulable_verdict
from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys, Malformed, Toggle, parse_rfc3339, scan_toggles
from vllm_remedy.kube.gpus import pod_gpu_request
from vllm_remedy.kube.health import ContainerHealth, PodHealth, flapping_container
from vllm_remedy.kube.history import template_of
from vllm_remedy.kube.lws_history import flag_disagreement, world_size_shortfall
from vllm_remedy.kube.wait import RESTART_LIMIT, crashing_container
from vllm_remedy.policy import Policy, format_duration
from vllm_remedy.remedies.enforce_eager import TOGGLE_FLAGS, beyond_limit
from vllm_remedy.remedies.predict import Prediction, failed_prediction, pinned_gpu
from vllm_remedy.remedies.restore_policy import concurrency_problem, gpu_problems, predicted
from vllm_remedy.vllm import manifest_flags_file
from vllm_remedy.vllm.cmdline import ServerCommand, find_server
from vllm_remedy.vllm.outcomes import Outcome, sized

CHECKS = ("max-model-len", "flag-bounds", "known-good-unit", "gpu-pinned", "enforce-eager", "concurrency",
          "model-max-len", "prediction", "crash-loop", "unschedulable", "fallback-route", "leader-worker-flags",
          "rollout-pending")
PASS, DRIFT, UNKNOWN = "pass", "drift", "unknown"
_OFF = ("false", "False", "0")


@dataclass(frozen=True)
class Check:
    """One rule's verdict for one host, with the figures that decided it."""

    name: str
    status: str
    detail: str

    @property
    def drifted(self) -> bool:
        """DRIFT only; UNKNOWN is kept apart (``HostChecks.unknown``) so the report can say which it was."""
        return self.status == DRIFT

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape the drift report and its consumers read."""
        return {"check": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class Observed:
    """What the checks read from the Deployment, reported next to them."""

    image: str
    model: str | None
    model_revision: str | None
    flags: dict[str, str]
    gpu: str | None
    gpus_per_pod: int
    toggles: tuple[Toggle, ...]
    unreadable: tuple[Malformed, ...] = ()  # toggle records that cannot be read: drift, never an error

    def to_json(self) -> dict[str, Any]:
        """What was read, so a reader of the report can verify each verdict without the cluster."""
        return {"image": self.image, "model": self.model, "model_revision": self.model_revision,
                "flags": dict(self.flags), "gpu": self.gpu, "gpus_per_pod": self.gpus_per_pod,
                "toggles": [{"name": t.name, "expires": t.expires} for t in self.toggles]}


def observe(deployment: Mapping[str, Any], keys: Keys, container: str | None = None) -> tuple[ServerCommand, Observed]:
    """The server and the observed unit; UserError when the template has no single vLLM server."""
    spec = dict(template_of(deployment).get("spec") or {})
    server = find_server(spec, container)
    notes = (deployment.get("metadata") or {}).get("annotations") or {}
    toggles, unreadable = scan_toggles(keys, notes)
    return server, Observed(server.image, server.model, server.flags.get("revision"), dict(server.flags),
                            pinned_gpu(spec), pod_gpu_request(spec), tuple(toggles), tuple(unreadable))


def check_max_model_len(policy: Policy, server: ServerCommand) -> Check:
    """Without --max-model-len the model's full context must fit in KV cache, a common cause of OOM at start."""
    value = server.flags.get("max-model-len")
    if not policy.require_explicit_max_model_len:
        return Check("max-model-len", PASS, "policy does not require it" + (f" (set: {value})" if value else ""))
    path = server.flags.get(manifest_flags_file.FLAG) if not manifest_flags_file.ignored(server) else None
    if value is None and path is not None:  # a --config file not read here may set it: unseen is unknown, not drift
        return Check("max-model-len", UNKNOWN, f"--max-model-len is not in argv, and vLLM's --config file {path} "
                     "(not read here) may set it")
    if value is None:
        return Check("max-model-len", DRIFT, "--max-model-len is not set: the model's default context length applies")
    return Check("max-model-len", PASS, f"--max-model-len {value}")


def check_flag_bounds(policy: Policy, server: ServerCommand) -> Check:
    """Memory-sensitive flags outside the policy's bounds make a tuned unit OOM-prone again."""
    broken = [v for v in policy.check_flags(server.flags) if v.value is not None]
    if broken:
        return Check("flag-bounds", DRIFT, "; ".join(str(v) for v in broken))
    bounded = sorted(f for f, _ in policy.flags.items() if f in server.flags)
    return Check("flag-bounds", PASS, f"within bounds: {', '.join(bounded)}" if bounded else "no bounded flag set")


def check_known_good_unit(policy: Policy, observed: Observed) -> Check:
    """Only image+model+revision+flags proven together are trusted; any other combination is drift."""
    if not policy.known_good:
        return Check("known-good-unit", PASS, f"policy {policy.name or policy.source} lists no known-good unit")
    unit_flags = {k: v for k, v in observed.flags.items() if k != "revision"}
    for unit in policy.known_good:
        if (unit.model is None or unit.model == observed.model) and unit.matches(
                observed.image, unit_flags, observed.model_revision):
            return Check("known-good-unit", PASS, f"matches known-good unit {unit.name or unit.image}")
    running = (f"image {observed.image}, model {observed.model}, revision {observed.model_revision or 'unpinned'}")
    names = ", ".join(u.name or u.image for u in policy.known_good)
    return Check("known-good-unit", DRIFT, f"running unit ({running}, flags {_flags(unit_flags)}) is none of the "
                 f"allowed units: {names}")


def _flags(flags: Mapping[str, str]) -> str:
    return " ".join(f"--{k}" if v == "true" else f"--{k} {v}" for k, v in sorted(flags.items())) or "(none)"


def check_gpu_pinned(policy: Policy, observed: Observed) -> Check:
    """The memory estimate holds only on the GPU it was made for, so an unpinned or other GPU is drift."""
    if not policy.gpu.pinned:
        return Check("gpu-pinned", PASS, "policy pins no GPU product")
    problems = gpu_problems(policy, observed.gpu, observed.gpus_per_pod)  # restore ranks candidates by the same
    if problems:
        return Check("gpu-pinned", DRIFT, "; ".join(problems))
    return Check("gpu-pinned", PASS, f"pinned to {observed.gpu}, {observed.gpus_per_pod} GPU(s) per pod")


def _toggle_problems(observed: Observed, now: float, limit: float | None) -> list[str]:
    """Each toggle record that is drift: unreadable, past its expiry, or expiring later than we ever stamp."""
    said = [f"unreadable toggle record {b.name} ({b.problem}): check --{TOGGLE_FLAGS.get(b.name, b.name)} and "
            f"remove {', '.join(b.keys)} by hand" for b in observed.unreadable]
    for t in observed.toggles:
        if t.expired(now):
            said.append(f"toggle {t.name} expired at {t.expires} ({_ago(now - t.expires_at())} ago): run "
                        "`vllm-remedy expire` (restores the prior argv)")
        elif limit is not None and beyond_limit(t, now, limit) is not None:
            said.append(f"toggle {t.name} expires at {t.expires}, more than {format_duration(int(limit))} ahead (the "
                        "policy's enforce_eager.max_duration): no toggle under this policy set it; run `vllm-remedy "
                        "expire` (reverts it)")
    return said


def check_enforce_eager(observed: Observed, now: float, max_duration: float | None = None) -> Check:
    """Eager mode only as a timed toggle: on without a record, an unreadable record, a record past its expiry or
    one expiring more than the policy's ``max_duration`` (seconds) from ``now`` — which we never write — is drift."""
    problems = _toggle_problems(observed, now, max_duration)
    if problems:
        return Check("enforce-eager", DRIFT, "; ".join(problems))
    flags = {TOGGLE_FLAGS.get(t.name, t.name) for t in observed.toggles}
    permanent = [f for f in TOGGLE_FLAGS.values() if observed.flags.get(f, "false") not in _OFF and f not in flags]
    if permanent:
        return Check("enforce-eager", DRIFT, f"--{permanent[0]} is on with no timed toggle recorded: it disables "
                     "CUDA graphs for good; use the toggle (deploys/enforce_eager.py) or remove it")
    if observed.toggles:
        said = "; ".join(f"toggle {t.name} on until {t.expires}" for t in observed.toggles)
        return Check("enforce-eager", PASS, said)
    return Check("enforce-eager", PASS, "no timed toggle")


def _ago(seconds: float) -> str:
    minutes = int(max(seconds, 0) // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def predict(deployment: Mapping[str, Any], policy: Policy, container: str | None = None) -> Prediction:
    """The prediction the deploys print; an unpinned template is predicted on the policy's GPU."""
    prediction = predicted(template_of(deployment), policy, container)
    if prediction.estimate is None and prediction.gpu is None and not policy.gpu_product \
            and prediction.note.startswith("the template pins"):
        prediction = Prediction(None, None, "the template pins no GPU product and the policy names none, so the "
                                "card is the scheduler's choice")
    return prediction


def check_prediction(prediction: Prediction) -> Check:
    """Every memory verdict rests on the prediction: a model or GPU outside the catalogs is an explicit
    finding (UNKNOWN), never silence that reads as in sync; a start vLLM refuses at config time is drift (it never
    runs), its line without KV figures."""
    if prediction.estimate is None and prediction.refused:  # a value vLLM's argument parser refuses: exit 2
        return Check("prediction", DRIFT, f"predicted to fail: vLLM refuses the start at argument parsing (exit 2): "
                     f"{prediction.note}")
    if prediction.estimate is None:
        return Check("prediction", UNKNOWN, prediction.note or "no prediction")
    if not sized(prediction.estimate.outcome):  # vLLM refuses the start at config time: predicted, and a failure
        return Check("prediction", DRIFT, f"predicted to fail: {prediction.line()}")
    return Check("prediction", PASS, prediction.line())


def check_concurrency(policy: Policy, prediction: Prediction) -> Check:
    """A unit that fits but cannot serve peak concurrency will preempt or OOM under load, so it is drift.

    A start predicted to fail is drift by ``failed_prediction``, the rule ``check -f`` and every operation use: not
    only vLLM's own checks (``Estimate.fits``) but also a graph capture that dies past them (peak above the card),
    so drift never calls in sync a template ``check`` reports as ``start [error]``.
    """
    e = prediction.estimate
    if e is None:
        return Check("concurrency", UNKNOWN, f"no prediction: {prediction.note}")
    failed = failed_prediction(prediction)
    if e.outcome is Outcome.MAX_LEN_EXCEEDS_MODEL:  # filed under model-max-len: the engine never sizes a cache
        return Check("concurrency", UNKNOWN, "not sized: vLLM refuses --max-model-len at config time (model-max-len)")
    if failed is not None:
        return Check("concurrency", DRIFT, failed)
    below = concurrency_problem(policy, prediction)  # restore ranks candidates by the same words
    if below is not None:
        return Check("concurrency", DRIFT, below)
    return Check("concurrency", PASS, f"predicted maximum concurrency {e.max_concurrency:.2f}x ≥ peak "
                 f"{policy.peak_concurrency} on {prediction.gpu}")


def check_model_max_len(prediction: Prediction) -> tuple[Check, ...]:
    """A config refusal of its own kind, not a concurrency verdict; no check unless the start is refused so."""
    e = prediction.estimate
    if e is None or e.outcome is not Outcome.MAX_LEN_EXCEEDS_MODEL:
        return ()
    return (Check("model-max-len", DRIFT, failed_prediction(prediction) or f"predicted {e.outcome.value}"),)


def _container(row: Mapping[str, Any]) -> ContainerHealth:
    """The Pods fact's container row back as ``ContainerHealth``, so kube/wait.py's crash rule applies as is."""
    return ContainerHealth(name=str(row.get("name", "")), ready=bool(row.get("ready")),
                           restarts=int(row.get("restarts") or 0), state=str(row.get("state") or "unknown"),
                           waiting_reason=row.get("waiting_reason"), waiting_message=row.get("waiting_message"),
                           exit_code=row.get("exit_code"), terminated_reason=row.get("terminated_reason"),
                           terminated_now=row.get("state") == "terminated")


def _pod(row: Mapping[str, Any]) -> PodHealth:
    return PodHealth(name=str(row.get("name", "")), namespace="", node=row.get("node"),
                     phase=str(row.get("phase") or "Unknown"), ready=bool(row.get("ready")),
                     ready_since=row.get("ready_since"), unschedulable=row.get("unschedulable"),
                     template_hash=row.get("template_hash"),
                     containers=tuple(_container(c) for c in row.get("containers") or []))


def _why(row: Mapping[str, Any], c: ContainerHealth, also: str = "") -> str:
    """The crash in one line: kubelet's reason, the last exit (``also``) and the classified startup log when read."""
    said = f"pod {row.get('name')} container {c.name}: {c.waiting_reason or f'{c.restarts} restarts'} " \
           f"(last exit {c.exit_code}, {c.terminated_reason or 'no reason'}){also}"
    startup = next((r.get("startup") for r in row.get("containers") or [] if r.get("name") == c.name), None) or {}
    failure = startup.get("failure")
    if failure and failure != "unknown":
        return f"{said}; startup log: {failure}"
    evidence = ((startup.get("report") or {}).get("evidence") or [""])[0].strip()
    return f"{said}; startup log: unclassified" + (f" ({evidence[:160]})" if evidence else "")


def check_crash_loop(pods: Mapping[str, Any] | None, restart_limit: int = RESTART_LIMIT, *, now: float | None = None,
                     stable: float = 0.0) -> Check:
    """A crash-looping workload serves nothing, so it is drift whatever the other checks say (``pods``: the
    Pods fact, which the run reads once per host anyway; None when it was not read).

    kube/wait.py's rule, minus containers Ready now: a rollout wait sees fresh restart counts, drift sees a
    pod's lifetime count, and old deaths of a container that serves again are no loop — unless it is Ready
    for less than ``stable`` seconds (cluster time ``now``) after repeated deaths: restore's flapping rule
    (``kube.health.flapping_container``), between two OOMs under load.
    """
    if pods is None:
        return Check("crash-loop", UNKNOWN, "the pods were not read")
    current = [r for r in pods.get("pods") or [] if r.get("new") and not r.get("deleting")]
    crashing: list[tuple[Mapping[str, Any], ContainerHealth, str]] = []
    for r in current:
        health = _pod(r)
        if (c := crashing_container(health, restart_limit)) is not None and not c.ready:
            crashing.append((r, c, ""))
        elif now is not None and (c := flapping_container(health, now, stable)) is not None:
            crashing.append((r, c, f", Ready again for {format_duration(int(health.ready_for(now)))} only (stable "
                                   f"after {format_duration(int(stable))})"))
    revision = pods.get("new_revision")
    if crashing:
        more = f" (+{len(crashing) - 1} more pod(s))" if len(crashing) > 1 else ""
        return Check("crash-loop", DRIFT, f"revision {revision} crash-loops: {_why(*crashing[0])}{more}")
    if not current:
        return Check("crash-loop", PASS, f"no pod of revision {revision} running")
    return Check("crash-loop", PASS, f"{len(current)} pod(s) of revision {revision}, none crash-looping")


def check_rollout_pending(workload: Mapping[str, Any], pods: Mapping[str, Any] | None) -> Check | None:
    """A StatefulSet under ``updateStrategy: OnDelete`` changes a pod only when it is deleted, so pods left on an
    older revision run it for good: what the template says (an expired toggle's revert, budget's fix) is not what
    serves. None for every other workload (a rollout there finishes by itself; a partition holds pods on purpose)."""
    spec = workload.get("spec") or {}
    if str(workload.get("kind") or "") != "StatefulSet" or (spec.get("updateStrategy") or {}).get("type") != "OnDelete":
        return None
    if pods is None:
        return Check("rollout-pending", UNKNOWN, "the pods were not read")
    behind = [r for r in pods.get("pods") or [] if not r.get("new") and not r.get("deleting")]
    if not behind:
        return Check("rollout-pending", PASS, f"every pod runs the update revision {pods.get('new_revision')}")
    named = ", ".join(f"{r.get('name')} (revision {r.get('revision')})" for r in behind)
    return Check("rollout-pending", DRIFT, f"pods {named} do not run the update revision {pods.get('new_revision')}: "
                 "under updateStrategy OnDelete they change only when deleted")


def check_leader_worker_flags(lwt: Mapping[str, Any], container: str | None = None) -> Check:
    """A group whose leader and workers start different engines splits the model inconsistently, and restore refuses
    to remediate it: the same rule as restore (never a copy), so drift reports before a 3 a.m. refusal does."""
    why = flag_disagreement(lwt, container)
    if why:
        return Check("leader-worker-flags", DRIFT, f"{why}; make them agree before remediating")
    return Check("leader-worker-flags", PASS, "leader and worker templates agree on the model and memory flags")


@dataclass(frozen=True)
class HostChecks:
    """Every check for one host, the observed unit and the prediction."""

    checks: tuple[Check, ...]
    observed: Observed
    prediction: Prediction

    @property
    def drifted(self) -> list[Check]:
        """The failing checks, which decide the host's status and exit code."""
        return [c for c in self.checks if c.drifted]

    @property
    def unknown(self) -> list[Check]:
        """The checks that could not judge: no pass, so the host is not in sync either."""
        return [c for c in self.checks if c.status == UNKNOWN]


def run_checks(deployment: Mapping[str, Any], policy: Policy, now: float, container: str | None = None,
               pods: Mapping[str, Any] | None = None) -> HostChecks:
    """All checks of one Deployment at cluster time ``now`` (``pods``: its Pods fact); UserError for a template
    or record we cannot read."""
    keys = Keys(policy.annotation_prefix)
    try:
        server, observed = observe(deployment, keys, container)
    except UserError as exc:
        meta = deployment.get("metadata") or {}
        kind = str(deployment.get("kind") or "deployment").lower()  # a namespace host's StatefulSet, LWS, ...
        raise UserError(f"{kind} {meta.get('namespace')}/{meta.get('name')}: {exc}") from exc
    prediction = predict(deployment, policy, container)
    length = check_max_model_len(policy, server)
    if prediction.refused and "max-model-len" in prediction.note and length.status == PASS:  # not ok as written
        length = Check("max-model-len", DRIFT, f"--max-model-len {server.flags.get('max-model-len')}: vLLM's "
                       "argument parser refuses the start as written (exit 2, see prediction)")
    checks: tuple[Check, ...] = (length, check_flag_bounds(policy, server),
                                 check_known_good_unit(policy, observed), check_gpu_pinned(policy, observed),
                                 check_enforce_eager(observed, now, policy.enforce_eager.max_duration.total_seconds()),
                                 check_concurrency(policy, prediction), *check_model_max_len(prediction),
                                 check_prediction(prediction),
                                 check_crash_loop(pods, now=now, stable=policy.confirm.stable_for.total_seconds()),
                                 *(Check(UNSCHEDULABLE, DRIFT if v[0] else PASS, v[1]) for v in [unschedulable_verdict(
                                     deployment, pods, now, policy.restore.rollout_timeout.total_seconds())] if v))
    lwt = (deployment.get("spec") or {}).get("leaderWorkerTemplate")  # a LeaderWorkerSet host's view carries it
    if isinstance(lwt, Mapping):
        short = world_size_shortfall(lwt, container, policy.gpu.resource)  # vLLM refuses it before sizing memory
        if short is not None:
            checks = tuple(Check("prediction", DRIFT, f"predicted to fail: {short}") if c.name == "prediction" else c
                           for c in checks)
        checks = (*checks, check_leader_worker_flags(lwt, container))
    else:  # one pod: its GPUs against its engine, and pipeline stages the memory model does not size
        layout = layout_verdicts(server, prediction, policy.gpu.resource)
        checks = tuple(Check(c.name, *layout[c.name]) if c.name in layout else c for c in checks)
    pending = check_rollout_pending(deployment, pods)
    if pending is not None:
        checks = (*checks, pending)
    return HostChecks(checks, observed, prediction)


def expiry_seconds(toggle: Toggle) -> float:
    """A toggle's expiry as epoch seconds (for the override-expiry metric)."""
    return parse_rfc3339(toggle.expires, f"toggle {toggle.name} expiry")
