"""The gate in each host's cluster time and the clock it reads (hostile review 15b, F9), without a cluster."""

from __future__ import annotations

from vllm_remedy.kube.errors import KubeError
from vllm_remedy.respond.clock import ClusterTime
from vllm_remedy.respond.gate import RUN, SKIP, Gate, stamped

H, OTHER = "@k8s/prod/llm/llama-8b", "@k8s/rehearsal/llm/llama-8b"


class Server:
    """A client whose API server answers ``Date`` from a clock running ``speed`` times the test's."""

    def __init__(self, real: list[float], origin: float, speed: float) -> None:
        self.real, self.origin, self.speed, self.down = real, origin, speed, False

    def server_time(self) -> float:
        if self.down:
            raise KubeError("rehearsal: GET /version: no answer")
        return self.origin + self.real[0] * self.speed


def test_the_clock_is_read_where_it_may_block_and_guessed_at_the_measured_speed_where_it_may_not() -> None:
    real = [0.0]
    clock = ClusterTime(lambda: real[0])
    assert clock.guess() is None  # never read: no verdict from a guess
    server = Server(real, 1_800_000_000.0, 60.0)
    assert clock.read(server) == 1_800_000_000.0
    real[0] = 10.0
    assert clock.read(server) == 1_800_000_600.0  # measured: 60 cluster seconds per real second
    real[0] = 12.0
    assert clock.guess() == 1_800_000_720.0
    server.down = True
    assert clock.now(server) == 1_800_000_720.0 and clock.now(None) == 1_800_000_720.0


def test_repeats_and_cool_downs_count_in_the_clock_of_the_host_that_acted() -> None:
    gate = Gate()
    assert gate.decide(H, "f1", "auto", 600, 1_000_000.0).kind == RUN  # H's cluster time
    gate.finished(H, 1_000_100.0)
    clocks = {H: 1_000_200.0, OTHER: 5.0}
    dup = gate.repeat("f1", clocks.get)
    assert dup is not None and dup.reason == "duplicate: alert f1 led to an action 200s ago (cool-down 600s)"
    assert gate.repeat("f1", lambda host: None) is None  # the host's clock not known yet: the dispatcher decides
    clocks[H] = 1_000_601.0
    assert gate.repeat("f1", clocks.get) is None


def test_the_policys_cool_down_now_decides_not_the_one_the_action_was_decided_under() -> None:
    gate = Gate()
    assert gate.decide(H, "f1", "auto", 12 * 3600, 0.0).kind == RUN
    gate.finished(H, 100.0)
    assert gate.decide(H, "f2", "auto", 12 * 3600, 200.0).kind == SKIP
    assert gate.decide(H, "f2", "auto", 60, 200.0).kind == RUN  # lowered to 1m: the next page acts
    gate.finished(H, 300.0)
    assert gate.decide(H, "f1", "auto", 60, 400.0).kind == RUN  # a repeat too, by the value now


def test_a_stamp_from_the_clusters_future_does_not_mute_the_responder() -> None:
    at = "vllm-remedy.io/last-action-at"
    now = 1796320800.0  # 2026-12-03T18:00:00Z
    assert stamped({at: "2026-12-03T18:00:30Z"}, "vllm-remedy.io/", 600, now) is not None  # Date's whole seconds
    decision, age = stamped({at: "2026-12-03T18:00:30Z"}, "vllm-remedy.io/", 600, now) or (None, None)
    assert age == 0 and decision is not None and "(600s left)" in decision.reason
    assert stamped({at: "2026-12-04T08:00:00Z"}, "vllm-remedy.io/", 600, now) is None  # 14 h ahead: not a deploy's
