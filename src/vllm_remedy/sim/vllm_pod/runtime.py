"""The vLLM container runtime: plugs into the kubelet's Runtime seam and runs vLLM containers as vLLM would.

A container is recognised by its argv (``find_server``); anything else runs on the fallback runtime.
On every (re)start the runtime plans the whole run from the memory model (``launch.plan``), moves its KV
cache to what the card really gives (``reality``: the model's measured error, unless exact) and places the
version's startup log in simulated time (``timeline``); once serving, the kubelet polls
``load_check`` and the apiserver proxies ``/health`` and ``/metrics`` to ``http``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.sim import load as loadmodel
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.protocols import RuntimeHost
from vllm_remedy.sim.runtime import (
    EXIT_CODE,
    LOG_LINES,
    READY_AFTER,
    ContainerContext,
    ContainerRun,
    Exit,
    HttpReply,
    LogLine,
    PlainRuntime,
    Runtime,
)
from vllm_remedy.sim.store import Store
from vllm_remedy.sim.vllm_pod import (
    config_order,
    config_splice,
    device,
    env,
    flag_sized,
    headless,
    keys,
    metrics,
    script_shell,
    timeline,
)
from vllm_remedy.sim.vllm_pod.hf_cache import with_pod_volumes
from vllm_remedy.sim.vllm_pod.launch import Launch, Refusal, plan
from vllm_remedy.sim.vllm_pod.reality import Reality
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.versions import parse_version

Obj = dict[str, Any]
LOAD_CHECK_SECONDS = 30.0  # how often (simulated) a serving engine re-reads its load
_TEXT = "text/plain; charset=utf-8"
_METRICS = "text/plain; version=0.0.4; charset=utf-8"


class VllmRuntime:
    """Runtime for vLLM containers; ``store`` (optional) lets load annotations on Deployments count."""

    def __init__(self, clock: Clock, store: Store | None = None, fallback: Runtime | None = None,
                 reality: Reality | None = None) -> None:
        self.clock, self.store = clock, store
        self.fallback: Runtime = fallback or PlainRuntime()
        self.reality = reality or Reality()  # how far starts stray from the estimate (perturbed by default)

    def start(self, ctx: ContainerContext) -> ContainerRun:
        """One (re)start as vLLM would run it: argv expanded as kubelet and the shell would, then the memory
        model decides between a start that exits with its error log and one that serves; other containers
        and the plain runtime's test hooks go to the fallback."""
        if any(hook in keys.annotations(ctx.pod) for hook in (EXIT_CODE, READY_AFTER, LOG_LINES)):
            return self.fallback.start(ctx)  # an explicit test hook of the plain runtime wins
        values = env.pod_env(ctx.container, ctx.pod, self.store)  # envFrom, valueFrom: kubelet's env
        container = env.kubelet_expand(env.with_env(ctx.container, values))
        now = self.clock.now() if ctx.started is None else ctx.started
        started = timeline.sim_datetime(now)
        # `sh -c 'MODEL=...; echo ... >&2; exec vllm serve "$MODEL" $ARGS'`: the shell prints and expands first
        shell = script_shell.prepare(container, values, str((ctx.pod.get("metadata") or {}).get("name") or ""),
                                     started)
        try:
            cmd = find_server({"containers": [shell.container]})
        except UserError:
            return self.fallback.start(ctx)
        printed = tuple(LogLine(0.0, line) for line in shell.printed)
        if shell.refused is not None:
            return ContainerRun(log=(*printed, LogLine(0.0, shell.refused)), ready_after=None,
                                exit=Exit(after=0.1, code=1), http=_refused)
        container = shell.container
        # vLLM's --config YAML, as the kubelet mounts it from a ConfigMap (``config_splice``)
        cmd = config_splice.read_into(cmd, config_splice.file_of([t.value for t in cmd.words], container, ctx.pod,
                                                                 self.store))
        # `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 exec vllm serve ...`: what the process itself sees
        container = env.with_env(container, {**values, **env.command_env(cmd, container, values)})
        container = with_pod_volumes(container, ctx.pod)  # a Secret's or read-only PVC's mount (``hf_cache``)
        decided = plan(cmd, container, ctx.node, ctx.gpu_memory_used_by_others_mib, keys.group_size(ctx.pod))
        if not isinstance(decided, Launch):
            decided = _with_pod_ip(decided, str(ctx.extras.get("pod_ip") or
                                                (ctx.pod.get("status") or {}).get("podIP") or ""))
            p = timeline.plan_refusal(decided, started)
            return ContainerRun(log=(*printed, *p.lines), ready_after=None, exit=p.exit, http=_refused)
        decided = flag_sized.size(self.reality.apply(decided))  # a flag-sized cache is the flag's, not moved
        deployment = self.deployment_of(self.store, ctx.pod)
        if headless.applies(cmd, decided.version):  # a data-parallel engine node: no API server (``headless``)
            return ContainerRun(log=(*printed, *headless.lines(cmd, decided, started)), ready_after=None, exit=None,
                                http=_refused, gpu_gib=own_gib(decided))
        p = timeline.plan_start(decided, started, oom_killed=self._oom_killed(ctx.pod, deployment))
        if p.exit is not None:
            return ContainerRun(log=(*printed, *p.lines), ready_after=None, exit=p.exit, http=_refused,
                                gpu_gib=own_gib(decided))
        engine = _Engine(self, decided, ctx, now, p.ready_after or 0.0, p.startup_text, deployment)
        return ContainerRun(log=(*printed, *p.lines), ready_after=p.ready_after, exit=None,
                            load_check=engine.load_check, load_check_every=LOAD_CHECK_SECONDS, http=engine.http,
                            gpu_gib=own_gib(decided))

    def _oom_killed(self, pod: Obj, deployment: str) -> bool:
        """The host-OOM scenario, on the pod or (without a rollout) on its Deployment."""
        if keys.OOM_KILLED in keys.annotations(pod):
            return keys.truthy(keys.annotations(pod)[keys.OOM_KILLED])
        if self.store is None or not deployment:
            return False
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        owner = self.store.find("deployments.apps", namespace, deployment)
        return keys.truthy(keys.annotations(owner).get(keys.OOM_KILLED, ""))

    # -- load lookup -----------------------------------------------------------------------------

    def load_for(self, ctx: ContainerContext, deployment: str) -> tuple[loadmodel.LoadSpec, float]:
        """(load spec, this pod's share of concurrent requests) from annotations and the cluster."""
        meta = ctx.pod.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        pod = self.store.find("pods", namespace, name) if self.store else None
        deploy = self.store.find("deployments.apps", namespace, deployment) if self.store and deployment else None
        raw = keys.annotations(pod or ctx.pod).get(keys.LOAD)
        where = f"pod {namespace}/{name} annotation {keys.LOAD}"
        if raw is None and deploy is not None:
            raw = keys.annotations(deploy).get(keys.LOAD)
            where = f"deployment {namespace}/{deployment} annotation {keys.LOAD}"
        try:
            spec = loadmodel.parse_load(raw, where) if raw is not None else loadmodel.LoadSpec()
        except UserError:
            spec = loadmodel.LoadSpec()  # a typo in a scenario must not crash the control loop
        total = spec.requests if spec.requests is not None else float(ctx.load())
        if raw is not None and keys.annotations(pod or ctx.pod).get(keys.LOAD) is not None:
            return spec, total  # a pod's own annotation is its own load
        ready = int(((deploy or {}).get("status") or {}).get("readyReplicas") or 1)
        return spec, total / max(1, ready)

    @staticmethod
    def deployment_of(store: Store | None, pod: Obj) -> str:
        """The Deployment that owns ``pod`` through its ReplicaSet ("" for bare pods)."""
        if store is None:
            return ""
        meta = pod.get("metadata") or {}
        ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return ""
        rs = store.find("replicasets.apps", meta.get("namespace", ""), ref.get("name", ""))
        owner = next((r for r in ((rs or {}).get("metadata") or {}).get("ownerReferences") or []
                      if r.get("controller")), None)
        return str(owner.get("name", "")) if owner and owner.get("kind") == "Deployment" else ""


@dataclass
class _Engine:
    """One serving container instance: its budget, load meter and HTTP endpoints."""

    runtime: VllmRuntime
    launch: Launch
    ctx: ContainerContext
    started: float
    up_after: float
    startup_text: str
    deployment: str = ""
    meter: loadmodel.LoadMeter = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        est, res = self.launch.estimate, self.launch.resolved
        budget = loadmodel.EngineBudget(
            kv_cache_tokens=est.kv_cache_tokens, max_num_seqs=res.max_num_seqs, max_num_batched_tokens=res.mnbt,
            max_model_len=est.max_model_len, vocab_size=self.launch.model.vocab_size, peak_gib=est.peak_gib,
            total_gib=est.total_gib)
        self.meter = loadmodel.LoadMeter(budget, since=self.started + self.up_after)
        version = parse_version(self.launch.version) or (0, 0, 0)
        self.version, self.engine = version, self.launch.resolved.rules.engine.lower()  # V0 where it runs

    def up(self, now: float) -> bool:
        """Serving once the simulated startup is over; before that nothing listens, as while vLLM still loads."""
        return now >= self.started + self.up_after - 1e-6

    def observe(self, now: float) -> tuple[loadmodel.LoadSpec, float, loadmodel.LoadState]:
        """Advance the load meter to ``now``; load is re-read each time so annotation edits act without a restart."""
        spec, share = self.runtime.load_for(self.ctx, self.deployment)
        with self.lock:
            st = self.meter.advance(now, spec, share)
        return spec, share, st

    def load_check(self, _offered: float) -> Exit | None:
        """Polled by the kubelet while ready: a CUDA OOM when the load needs memory the GPU lacks."""
        now = self.runtime.clock.now()
        if not self.up(now):
            return None
        spec, share, _ = self.observe(now)
        tried = loadmodel.oom_allocation_gib(self.meter.budget, spec, share)
        if tried is None:
            return None
        free = self.meter.budget.total_gib - self.meter.budget.peak_gib
        tail = timeline.oom_under_load_tail(self.launch, self.startup_text, timeline.sim_datetime(self.started),
                                            timeline.sim_datetime(now), tried, free)
        return Exit(after=0.0, code=1, reason="Error", log=tail)

    def http(self, path: str) -> HttpReply:
        """What vLLM's OpenAI server answers through pods/proxy (/health, /metrics in this release's families,
        /version, /v1/models); connection refused until startup is over."""
        now = self.runtime.clock.now()
        if not self.up(now):
            return _refused(path)
        route = path.split("?", 1)[0].rstrip("/") or "/"
        if route in ("/health", "/ping"):
            return 200, _TEXT, b""
        if route == "/metrics":
            spec, _, st = self.observe(now)
            body = metrics.exposition(self.version, self.engine, self.launch.served_name, st,
                                      self.meter.preemptions, spec.prefix_hit)
            return 200, _METRICS, body.encode()
        if route == "/version":
            return 200, "application/json", json.dumps({"version": self.launch.version}).encode()
        if route == "/v1/models":
            model = {"id": self.launch.served_name, "object": "model", "owned_by": "vllm", "root": self.launch.model_id,
                     "max_model_len": self.launch.estimate.max_model_len}
            return 200, "application/json", json.dumps({"object": "list", "data": [model]}).encode()
        return 404, "application/json", b'{"detail":"Not Found"}'


def own_gib(launch: Launch) -> float:
    """GPU memory the vLLM process itself holds on each of its GPUs while it runs: its CUDA context when the
    free-memory check refuses the start (it dies right after the snapshot), else the memory model's peak without
    what other processes hold (a start that fails later dies at that peak; one that serves keeps it). The refused
    start dies right after the snapshot: before 0.11 that comes before NCCL's init (``device.held_at_snapshot``)."""
    est, res = launch.estimate, launch.resolved
    if est.outcome is Outcome.FREE_MEMORY_BELOW_UTILIZATION:
        return device.held_at_snapshot(launch)
    return max(0.0, est.peak_gib - res.other_process_gib)


def _refused(path: str) -> HttpReply:
    """Nothing listens yet (or any more): what the apiserver's proxy answers."""
    return 503, _TEXT, b"error trying to reach service: connect: connection refused"


def install(cluster: RuntimeHost, reality: Reality | None = None) -> VllmRuntime:
    """Make ``cluster`` run vLLM containers with this simulator (others keep the plain runtime); the reality is
    ``reality``, else the one a vLLM runtime already there had."""
    before = cluster.runtime.reality if isinstance(cluster.runtime, VllmRuntime) else None
    runtime = VllmRuntime(cluster.clock, cluster.store, fallback=cluster.runtime, reality=reality or before)
    cluster.runtime = runtime
    return runtime


def _with_pod_ip(refusal: Refusal, ip: str) -> Refusal:
    """Ray's placement group pins its first bundle to this node by the pod's IP (``get_ip()``): the words name it."""
    if not ip:
        return refusal
    return replace(refusal, error=refusal.error.replace(config_order.POD_IP, ip),
                   waits=tuple((t, level, m.replace(config_order.POD_IP, ip)) for t, level, m in refusal.waits))
