"""Alerting rules from a policy: the runbook's "alert on OOM restarts and KV usage above 90 %", made concrete.

Every alert names the runbook step that answers it, so the page that wakes someone says what to do first.
Why each expression looks as it does:

- A CUDA OOM is **not** OOMKilled: vLLM's Python process raises ``torch.OutOfMemoryError`` (or a ValueError
  about the KV cache) and exits 1 with reason ``Error``. So the CUDA-OOM rule pairs a restart with
  ``kube_pod_container_status_last_terminated_exitcode == 1`` (kube-state-metrics ≥ 2.x); the log (runbook
  step 2, ``vllm-remedy diagnose``) tells it from other Python errors. Host OOM kills (exit 137) have their
  own rule on ``kube_pod_container_status_last_terminated_reason{reason="OOMKilled"}``.
- "vLLM pods" = containers whose image is vLLM's (or a known-good unit's), via ``kube_pod_container_info``,
  in the policy's namespaces/deployments: sidecars restarting do not page the vLLM on-call.
- ``vllm:kv_cache_usage_perc`` is a 0–1 fraction despite its name; releases up to 0.10 export the older
  ``vllm:gpu_cache_usage_perc`` (0.9.2–0.10 export both): ``or`` over the same labels counts each pod once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from vllm_remedy.policy import Policy, format_duration

from .promql import PodScope, quote

#: How far back a restart still counts: longer than CrashLoopBackOff's 5-minute back-off cap.
RESTART_WINDOW = "10m"
#: Grace before an overdue toggle alerts: longer than the CronJob's 10-minute schedule (manifests/).
EXPIRY_GRACE = timedelta(minutes=15)
#: A drift check older than this (three missed 10-minute runs) means drift is no longer watched.
STALE_AFTER = timedelta(minutes=30)

#: Runbook step → (anchor, title), as the runbook's headings read.
STEPS = {
    1: ("step-1-restore-service", "Step 1: restore service"),
    2: ("step-2-read-the-startup-log", "Step 2: read the startup log"),
    4: ("step-4-fix-the-memory-budget", "Step 4: fix the memory budget"),
    5: ("step-5-oom-under-load", "Step 5: OOM under load"),
    7: ("prevent-it-next-time", "Prevent it next time"),
}


@dataclass(frozen=True)
class AlertRule:
    """One Prometheus alerting rule, with the runbook step it points to."""

    alert: str
    expr: str
    for_: timedelta
    severity: str
    summary: str
    description: str
    step: int

    def to_dict(self, runbook_url: str, policy: str | None) -> dict[str, Any]:
        """The rule as Prometheus (and the operator's PrometheusRule) spell it."""
        anchor, title = STEPS[self.step]
        labels = {"severity": self.severity}
        if policy is not None:
            labels["policy"] = policy
        return {
            "alert": self.alert,
            "expr": self.expr,
            "for": _duration(self.for_),
            "labels": labels,
            "annotations": {
                "summary": self.summary,
                "description": f"{self.description} Runbook: {title}.",
                "runbook_url": f"{runbook_url}#{anchor}",
                "runbook_step": title,
            },
        }


def _duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    return format_duration(seconds) if seconds > 0 else "0s"


def _fraction(percent: float) -> str:
    return f"{percent / 100:.6g}"


def _number(value: float) -> str:
    return f"{value:.6g}"


_WHERE = "{{ $labels.namespace }}/{{ $labels.pod }}"


def policy_rules(policy: Policy) -> list[AlertRule]:
    """The alerts for one policy's Deployments, thresholds and ``for`` taken from ``policy.alerts``."""
    scope = PodScope.of(policy)
    limits = policy.alerts
    restarts = f"increase({scope.ksm('kube_pod_container_status_restarts_total')}[{RESTART_WINDOW}]) > 0"
    same = " and on (namespace, pod, container) "
    vllm = scope.vllm_containers()
    usage = (f"(max by (namespace, pod, model_name) ({scope.vllm_series('vllm:kv_cache_usage_perc')})"
             f" or max by (namespace, pod, model_name) ({scope.vllm_series('vllm:gpu_cache_usage_perc')}))"
             f" > {_fraction(limits.kv_cache_usage_percent)}")
    preempt = (f"sum by (namespace, pod, model_name) (rate({scope.vllm_series('vllm:num_preemptions_total')}[5m]))"
               f" * 60 > {_number(limits.preemptions_per_minute)}")
    hosts = {"host": scope.host_regex()}
    drift = f"vllm_remedy_drift_detected{{host=~{quote(hosts['host'])}}} > 0"
    expiry = f"vllm_remedy_override_expiry_timestamp_seconds{{host=~{quote(hosts['host'])}}} < time()"
    logs = ("kubectl -n {{ $labels.namespace }} logs {{ $labels.pod }} -c {{ $labels.container }} --previous"
            " | vllm-remedy diagnose --log -")
    return [
        AlertRule(
            "VllmCudaOomRestart",
            restarts + same + scope.ksm("kube_pod_container_status_last_terminated_exitcode") + " == 1" + vllm,
            timedelta(0), "critical",
            f"vLLM container {_WHERE} restarted after exit 1, as vLLM exits on CUDA out of memory (or any other error)",
            "vLLM exits 1 (reason Error, not OOMKilled) on torch.OutOfMemoryError, 'No available memory for the"
            " cache blocks' and 'max seq len is larger than the KV cache'. Roll back to the last known-good"
            " revision first, then confirm the cause with: " + logs + " --exit-code 1.",
            1),
        AlertRule(
            "VllmContainerOOMKilled",
            restarts + same + scope.ksm("kube_pod_container_status_last_terminated_reason", reason="OOMKilled")
            + " == 1" + vllm,
            timedelta(0), "critical",
            f"vLLM container {_WHERE} was OOMKilled by the host (container memory limit), not a CUDA OOM",
            "The kernel killed the process for host memory (exit 137); vLLM's log ends without a CUDA error."
            " Check the container memory limit against CPU-side usage (weights staging, swap space,"
            " multimodal inputs): " + logs + " --exit-code 137 --reason OOMKilled.",
            2),
        AlertRule(
            "VllmCrashLoopBackOff",
            scope.ksm("kube_pod_container_status_waiting_reason", reason="CrashLoopBackOff") + " == 1" + vllm,
            limits.for_, "critical",
            f"vLLM container {_WHERE} is in CrashLoopBackOff",
            "The endpoint is down or degraded. Roll back to the last known-good revision"
            " (vllm-remedy's restore deploy, or kubectl -n {{ $labels.namespace }} rollout undo), then read"
            " the previous container's log: " + logs + ".",
            1),
        AlertRule(
            "VllmKvCacheUsageHigh", usage, limits.for_, "warning",
            f"vLLM KV cache on {_WHERE} above {_number(limits.kv_cache_usage_percent)}%"
            f" for {_duration(limits.for_)}",
            "Requests are close to being preempted or queued. Shed load (lower --max-num-seqs, shift traffic to"
            " the fallback route) and check that the startup log's maximum concurrency covers peak"
            f" concurrency ({policy.peak_concurrency}).",
            5),
        AlertRule(
            "VllmPreemptionsRising", preempt, limits.for_, "warning",
            f"vLLM on {_WHERE} preempts more than {_number(limits.preemptions_per_minute)} requests per minute",
            "The KV cache cannot hold the running batch: cap --max-num-batched-tokens and the prompt length at"
            " the gateway, or lower --max-num-seqs.",
            5),
        AlertRule(
            "VllmRemedyDriftDetected", drift, limits.for_, "warning",
            "{{ $labels.host }} drifted from its policy ({{ $labels.check }})",
            "The scheduled drift check found the Deployment outside its policy (explicit max-model-len, flag"
            " bounds, known-good unit, pinned GPU). See `vllm-remedy drift` for the diff that would fix it.",
            4),
        AlertRule(
            "VllmRemedyOverridePastExpiry", expiry, EXPIRY_GRACE, "warning",
            "Timed override {{ $labels.flag }} on {{ $labels.host }} is past its expiry",
            "A temporary toggle (e.g. --enforce-eager, which costs throughput) should have reverted itself."
            " Run `vllm-remedy expire` and check the CronJob's last runs.",
            4),
    ]


def footprint_rules() -> list[AlertRule]:
    """Alerts on vllm-remedy's own checks: a drift check that stopped running must not read as "no drift"."""
    stale = int(STALE_AFTER.total_seconds())
    return [
        AlertRule(
            "VllmRemedyDriftCheckStale",
            f"time() - vllm_remedy_last_check_timestamp_seconds > {stale}"
            " or absent(vllm_remedy_last_check_timestamp_seconds)",
            timedelta(minutes=10), "warning",
            f"vllm-remedy's drift check has not completed for {_duration(STALE_AFTER)}",
            "Drift and overdue toggles are not being watched: a failing check never updates its timestamp."
            " Look at the CronJob's last Job and its logs.",
            7),
    ]
