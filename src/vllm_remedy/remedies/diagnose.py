"""Runbook steps 2–3, "read the startup log" and "what changed?", as a pure report over the facts.

Step 2 greps the previous container's log for the lines that size the KV cache and name the failure;
the same lines are kept here as evidence next to the classifier's verdict. Step 3 diffs the failing and
the good revision (flags, image tag, model revision, placement, resources, env — ``kube.diff``) and
looks at the GPU each pod got and what else is on that node: pods requesting GPUs, and GPU memory held outside
the pod (``held_memory``: the DCGM exporter and vLLM's own free-memory line).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import TOGGLE_FLAGS, Keys, Toggle
from vllm_remedy.kube.diff import describe, revision_diff
from vllm_remedy.kube.errors import RolloutError
from vllm_remedy.kube.history import templates_equal
from vllm_remedy.kube.rollout import choose_rollback, policy_pin
from vllm_remedy.policy import Policy
from vllm_remedy.remedies.enforce_eager import due
from vllm_remedy.remedies.held_memory import consumers, startup_lines
from vllm_remedy.remedies.predict import rules_note, unjudged
from vllm_remedy.remedies.restore import crash_failures, crash_looping, revisions
from vllm_remedy.vllm.cmdline import find_server

#: The runbook's step-2 grep: ``grep -Ei "model loading took|gpu blocks|kv cache|maximum concurrency|
#: out of memory|max seq len" | tail -20``.
EVIDENCE = re.compile(r"model loading took|gpu blocks|kv cache|maximum concurrency|out of memory|max seq len",
                      re.IGNORECASE)
_FIGURES = (("weights_gib", "model weights {:.2f} GiB"), ("kv_cache_tokens", "KV cache {:,} tokens"),
            ("gpu_blocks", "{:,} GPU blocks"), ("max_concurrency", "maximum concurrency {:.2f}x"),
            ("max_model_len", "max-model-len {}"))


def evidence_lines(text: str | Sequence[str], tail: int = 20) -> list[str]:
    """The runbook's grep over a log: matching lines, the last ``tail`` of them."""
    lines = text.splitlines() if isinstance(text, str) else list(text)
    return [line.rstrip() for line in lines if EVIDENCE.search(line)][-tail:]


def crashed_containers(pods: Mapping[str, Any], container: str | None = None) -> list[tuple[str, str, bool]]:
    """(pod, container, previous) for every failed container whose last death has a log to read."""
    out = []
    for pod in pods.get("pods") or []:
        for c in pod.get("containers") or []:
            if container is not None and c.get("name") != container:
                continue
            startup = c.get("startup") or {}
            if startup.get("previous") is not None:
                out.append((str(pod["name"]), str(c["name"]), bool(startup["previous"])))
    return out


#: Waiting reasons of a container the kubelet never created: no process ran, so there is no log to read and no
#: crash loop, only the kubelet's message (``secret "hf-token" not found``).
NOT_CREATED = {"CreateContainerConfigError": "create the Secret or ConfigMap it names, or mark the reference optional",
               "CreateContainerError": "the runtime refused the container spec"}


def not_created_lines(pods: Mapping[str, Any], container: str | None = None) -> list[str]:
    """One line per live container left Waiting because the kubelet would not create it, with its words."""
    out = []
    for pod in pods.get("pods") or []:
        for c in pod.get("containers") or []:
            reason = c.get("waiting_reason")
            if pod.get("deleting") or reason not in NOT_CREATED or container not in (None, c.get("name")):
                continue
            out.append(f"  {pod['name']}/{c['name']}: {reason} — {c.get('waiting_message') or 'no message'} "
                       f"(the kubelet did not create the container: there is no log; {NOT_CREATED[reason]})")
    return out


def _figures(report: Mapping[str, Any] | None) -> str:
    if not report:
        return "no startup figures"
    parts = [fmt.format(report[key]) for key, fmt in _FIGURES if report.get(key) is not None]
    return ", ".join(parts) or "no startup figures"


def release_rules(report: Mapping[str, Any] | None, not_judged: Sequence[str] = ()) -> str:
    """`` (vLLM 0.40.0: rules extrapolated from 0.34.0)`` when the logged release's rules were not read from its own
    source (the classification and the figures were judged by them), as the deploys' prediction lines say it
    (``predict.rules_note``); nothing for a modelled release, or a log that names no version (no rules applied). Then
    each of ``not_judged`` (``pod_unjudged``) in parentheses, as the prediction lines end."""
    version = (report or {}).get("vllm_version")
    note = rules_note(str(version)) if version else ""
    return "".join(f" ({n})" for n in (note, *not_judged) if n)


def pod_unjudged(template: Mapping[str, Any] | None, container: str | None) -> tuple[str, ...]:
    """What check says of each option of the pod's revision (``template``) a release past the newest read may have
    added (``predict.unjudged``); none when the revision or its server cannot be read."""
    if template is None:
        return ()
    try:
        return unjudged(find_server(dict(template.get("spec") or {}), container))
    except UserError:
        return ()


def compared_revisions(history: Mapping[str, Any], pods: Mapping[str, Any], policy: Policy,
                       container: str | None = None) -> tuple[Any, Any, str, str]:
    """(before, after, labels, why) for "what changed": the revision step 1 restores → the crash-looping current
    one; with no crash loop, the previous different revision → the current one (nothing is called bad then)."""
    revs = revisions(history)
    current = next((r for r in revs if r.number == history.get("current_revision")), None)
    if current is None:
        return None, None, "", "no rollout history"
    earlier = [r for r in sorted(revs, key=lambda r: -r.number) if r.number < current.number
               and not templates_equal(r.template, current.template)]
    if crash_failures(pods, container):
        try:
            choice = choose_rollback(revs, current.number, keys=Keys(policy.annotation_prefix),
                                     pinned=policy_pin(policy.known_good, container))
        except RolloutError as exc:
            return None, current, "", str(exc)
        return choice.revision, current, "good → bad", f"current revision crash-loops; good = {choice.rule}"
    if not earlier:
        return None, current, "", "no earlier revision with a different template"
    return earlier[0], current, "previous → current", "current revision is not crash-looping"


def gpu_lines(pods: Mapping[str, Any], nodes: Mapping[str, Any], memory: Mapping[str, Any] | None = None,
              namespace: str = "", container: str | None = None) -> list[str]:
    """Which GPU each pod got and what else is on that node (runbook step 3): other pods requesting GPUs, GPU
    memory held outside the pod (DCGM exporter, ``held_memory``) and vLLM's own free-memory line at startup."""
    by_name = {row["name"]: row for row in nodes.get("nodes") or []}
    placed = nodes.get("deployment_pods") or {}
    out = []
    tabled: set[str] = set()
    for pod in pods.get("pods") or []:
        if pod.get("deleting"):
            continue
        node = by_name.get(str(pod.get("node"))) if pod.get("node") else None
        if node is None:
            where = f"on node {pod['node']} (no GPU)" if pod.get("node") else "not scheduled"
            out.append(f"pod {pod['name']} (revision {pod.get('revision')}): {where}")
            continue
        others = [f"{c['pod']} ({c['gpus']} GPU)" for c in node.get("consumers") or []
                  if not c.get("ours") and c["pod"] not in placed]
        summary, table = consumers(node["name"], others, memory, namespace)
        out.append(f"pod {pod['name']} (revision {pod.get('revision')}): node {node['name']}, "
                   f"{node.get('product')} {node.get('memory_mib')} MiB, {node.get('requested')}/"
                   f"{node.get('allocatable')} GPUs requested; other GPU consumers: {summary}")
        if node["name"] not in tabled:
            tabled.add(node["name"])
            out += [f"  {line}" for line in table]
        out += [f"  {line}" for line in startup_lines(pod, container)]
    return out


def diagnose_lines(history: Mapping[str, Any], pods: Mapping[str, Any], nodes: Mapping[str, Any],
                   logs: Mapping[str, Sequence[str]], policy: Policy, container: str | None = None,
                   memory: Mapping[str, Any] | None = None, namespace: str = "") -> list[str]:
    """The whole read-only report, one string per printed line. ``logs`` maps ``pod/container`` → log lines;
    ``memory`` is the GpuMemory fact (None: not read, which the GPU lines say)."""
    looping = [p["name"] for p in pods.get("pods") or [] if not p.get("deleting")
               and any(crash_looping(c) for c in p.get("containers") or [])]
    out = [f"step 2 — startup log: {pods.get('ready', 0)}/{pods.get('total', 0)} pods Ready, "
           f"crash-looping: {', '.join(looping) or 'none'}"]
    seen = False
    templates = {r.number: r.template for r in revisions(history)}  # each pod's revision: its argv
    for pod in pods.get("pods") or []:
        for c in pod.get("containers") or []:
            startup = c.get("startup")
            if not startup or (container is not None and c["name"] != container):
                continue
            seen = True
            which = "previous" if startup.get("previous") else "current"
            said = pod_unjudged(templates.get(pod.get("revision")), c["name"])
            out.append(f"  {pod['name']}/{c['name']} ({which} log, {c.get('restarts')} restarts): "
                       f"{startup.get('failure') or 'no failure'} — {_figures(startup.get('report'))}"
                       f"{release_rules(startup.get('report'), said)}")
            if startup.get("log_error"):
                out.append(f"    log unavailable: {startup['log_error']}")
            out += [f"    | {line}" for line in evidence_lines(logs.get(f"{pod['name']}/{c['name']}") or [])]
    refused = not_created_lines(pods, container)
    out += refused
    if not seen and not refused:
        out.append("  no crashed container")
    before, after, labels, why = compared_revisions(history, pods, policy, container)
    if before is not None and after is not None:
        first, second = labels.split(" → ")
        out.append(f"step 3 — what changed: revision {before.number} ({first}) → revision {after.number} "
                   f"({second}); {why}")
        changes = describe(revision_diff(before.template, after.template, container))
        out += [f"  {line}" for line in changes] or ["  templates differ only outside the compared fields"]
    else:
        out.append(f"step 3 — what changed: nothing to compare ({why})")
    out.append("step 3 — GPUs:")
    out += [f"  {line}" for line in gpu_lines(pods, nodes, memory, namespace, container)] or ["  no pods"]
    return out


def toggle_lines(toggles: Sequence[Toggle], now: float, limit: float | None = None) -> list[str]:
    """One line per timed toggle recorded on the workload (``--enforce-eager``), at ``now`` (cluster time).

    diagnose never changes the workload, so it does not revert an expired toggle as the writing deploys do; it says
    so, next to the diff line the toggle explains (``--enforce-eager: (absent) → true``), since an expired toggle
    still costs throughput until something reverts it. ``limit``: the policy's ``enforce_eager.max_duration``."""
    out = []
    for toggle in toggles:
        flag = f"--{TOGGLE_FLAGS.get(toggle.name, toggle.name)}"
        try:
            why = due(toggle, now, limit)
        except UserError as exc:  # an unreadable expiry: every writing deploy warns about it and leaves it
            out.append(f"timed toggle {flag}: {exc}")
            continue
        if why is None:
            out.append(f"timed toggle {flag} until {toggle.expires}")
        elif toggle.expired(now):
            out.append(f"timed toggle {flag} expired at {toggle.expires}; `vllm-remedy expire` or any writing deploy "
                       "reverts it")
        else:
            out.append(f"timed toggle {flag} until {toggle.expires}: {why}; `vllm-remedy expire` or any writing "
                       "deploy reverts it")
    return out
