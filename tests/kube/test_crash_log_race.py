"""crash_log when the kubelet restarts the container between the status read and the log read.

The status says the container is dead right now (its log is "current"), but by the time the log is read the kubelet
has started the next instance, whose half-written startup log holds no error. A game day read that log and reported
the crash as failure "none". The dead instance's log is then "previous", and must be read instead.
"""

from __future__ import annotations

from fixtures.kube_objects import MAX_LEN_LOG
from vllm_remedy.kube.errors import KubeError
from vllm_remedy.kube.health import ContainerHealth
from vllm_remedy.kube.wait import crash_log

# The next instance's log so far: it has sized its KV cache and not yet died (a KV-allocation OOM comes next), which
# the classifier reads as a start past every memory check, "none".
LOADING = ("INFO 06-02 14:46:01 [api_server.py:1289] vLLM API server version 0.9.0\n"
           "INFO 06-02 14:46:24 [kv_cache_utils.py:637] GPU KV cache size: 92,944 tokens\n"
           "INFO 06-02 14:46:24 [kv_cache_utils.py:640] Maximum concurrency for 8,192 tokens per request: 11.35x\n")


class Logs:
    """The two logs the kubelet keeps for a container: the running instance's and the one before it."""

    def __init__(self, current: str | None, previous: str | None) -> None:
        self.logs = {False: current, True: previous}
        self.reads: list[bool] = []

    def pod_log(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> str:
        self.reads.append(previous)
        log = self.logs[previous]
        if log is None:
            raise KubeError("previous terminated container not found")
        return log


def dead(exit_code: int | None = 1, now: bool = True) -> ContainerHealth:
    return ContainerHealth(name="vllm", ready=False, restarts=2, state="terminated" if now else "running",
                           waiting_reason=None, waiting_message=None, exit_code=exit_code,
                           terminated_reason="Error", terminated_now=now)


def test_a_restart_between_the_reads_falls_back_to_the_dead_instance_log() -> None:
    client = Logs(current=LOADING, previous=MAX_LEN_LOG)  # the status said "dead now"; the kubelet restarted it
    log, failure, _ = crash_log(client, "llm", "p", dead())  # type: ignore[arg-type]
    assert client.reads == [False, True]
    assert failure == "max_len_exceeds_kv" and log == MAX_LEN_LOG


def test_a_dead_container_never_reports_none_when_no_log_classifies() -> None:
    client = Logs(current=LOADING, previous=None)  # the previous log is gone too
    _, failure, _ = crash_log(client, "llm", "p", dead())  # type: ignore[arg-type]
    assert failure != "none"


def test_a_clean_exit_may_still_read_none() -> None:
    client = Logs(current=LOADING, previous=None)
    _, failure, _ = crash_log(client, "llm", "p", dead(exit_code=0))  # type: ignore[arg-type]
    assert failure == "none"
