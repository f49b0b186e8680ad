"""Which vLLM containers were stopped for a whole GPU scrape: only then is memory on their GPU someone else's.

The API shows a container's restart only after the kubelet's next status sync, while the DCGM exporter reads
the device at once; a container whose crash-loop back-off has run out may already hold its GPU again, so it is
never called stopped (a diagnose once blamed "a process outside the pod" for vLLM's own restart)."""

from __future__ import annotations

from typing import Any

from vllm_remedy.kube.annotations import parse_rfc3339
from vllm_remedy.kube.stopped import stopped_throughout

FINISHED = "2026-12-04T10:00:00Z"
T0 = parse_rfc3339(FINISHED)


def pod(state: dict[str, Any], restarts: int = 3, message: str = "back-off 40s restarting failed container=vllm "
        "pod=llama-8b-x_llm(uid)") -> dict[str, Any]:
    status: dict[str, Any] = {"name": "vllm", "restartCount": restarts, "state": state,
                              "lastState": {"terminated": {"exitCode": 1, "finishedAt": FINISHED}}}
    if "waiting" in state:
        state["waiting"].setdefault("message", message)
    return {"metadata": {"name": "p"}, "status": {"containerStatuses": [status]}}


def backing_off() -> dict[str, Any]:
    return pod({"waiting": {"reason": "CrashLoopBackOff"}})


def test_inside_its_back_off_a_waiting_container_is_stopped() -> None:
    assert stopped_throughout([backing_off()], [backing_off()], "vllm", T0 + 20) == {"p": {"stopped": True}}


def test_once_its_back_off_has_run_out_it_may_be_running_unseen() -> None:
    assert stopped_throughout([backing_off()], [backing_off()], "vllm", T0 + 39) == {"p": {"stopped": False}}
    assert stopped_throughout([backing_off()], [backing_off()], "vllm", T0 + 300) == {"p": {"stopped": False}}


def test_a_longer_back_off_in_go_notation_is_read() -> None:
    long = pod({"waiting": {"reason": "CrashLoopBackOff",
                            "message": "back-off 2m40s restarting failed container=vllm pod=x"}})
    assert stopped_throughout([long], [long], "vllm", T0 + 150) == {"p": {"stopped": True}}
    assert stopped_throughout([long], [long], "vllm", T0 + 159) == {"p": {"stopped": False}}


def test_an_unreadable_back_off_never_calls_the_memory_foreign() -> None:
    odd = pod({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off soon"}})
    assert stopped_throughout([odd], [odd], "vllm", T0 + 1) == {"p": {"stopped": False}}


def test_running_or_restarted_during_the_scrape_is_not_stopped() -> None:
    running = pod({"running": {"startedAt": FINISHED}})
    assert stopped_throughout([backing_off()], [running], "vllm", T0 + 1) == {"p": {"stopped": False}}
    again = pod({"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4)
    assert stopped_throughout([backing_off()], [again], "vllm", T0 + 1) == {"p": {"stopped": False}}


def test_a_container_that_exited_for_good_stays_stopped() -> None:
    done = pod({"terminated": {"exitCode": 1, "finishedAt": FINISHED}})
    assert stopped_throughout([done], [done], "vllm", T0 + 3600) == {"p": {"stopped": True}}
