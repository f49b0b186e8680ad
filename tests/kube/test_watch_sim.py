"""kube/watch.py against the rehearsal cluster (real HTTP server, real controllers at 60x): the watched wait gives
the poll's verdicts — rolled out; a crash loop failing fast with the classified log; a restart inside the settle
window — in a handful of requests, counted at the server."""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from typing import Any

from fixtures import sim_world
from fixtures.kube_objects import MAX_LEN_LOG
from fixtures.sim_world import Sim, deployment
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.patch import apply_deployment_patch, json_patch
from vllm_remedy.kube.watch import Feed, watch_restored
from vllm_remedy.sim.runtime import EXIT_AFTER, EXIT_CODE, LOG_LINES

live_sim = sim_world.live_sim  # one cluster "a", controllers at 60x, one L40S node


def counted(live_sim: Sim) -> Counter[str]:
    seen: Counter[str] = Counter()
    original = live_sim.server.dispatch

    def counting(req: Any) -> Any:
        seen["watch" if req.query.get("watch") in ("1", "true") else req.method] += 1
        return original(req)

    live_sim.server.dispatch = counting  # type: ignore[method-assign]
    return seen


def test_watched_wait_rolls_out_and_fails_fast_on_a_crash_loop(live_sim: Sim) -> None:
    cluster = live_sim.clusters["a"]
    client = KubeClient.for_context("a", kubeconfig=str(live_sim.kubeconfig))
    client.request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=deployment(replicas=1))
    seen = counted(live_sim)
    first = watch_restored(client, "llm", "llama-8b", 600, cluster.clock)
    assert (first.ok, first.outcome) == (True, "rolled-out"), first
    assert seen["watch"] == 3 and seen["GET"] <= 12, seen  # three lists, three watches, no poll

    current = client.get_deployment("llm", "llama-8b")
    bad = dict(current, spec=dict(current["spec"], template=dict(current["spec"]["template"])))
    bad["spec"]["template"]["metadata"] = dict(bad["spec"]["template"]["metadata"], annotations={
        EXIT_CODE: "1", EXIT_AFTER: "2", LOG_LINES: MAX_LEN_LOG.rstrip("\n")})
    apply_deployment_patch(client, "llm", "llama-8b", json_patch(current, bad))
    failed = watch_restored(client, "llm", "llama-8b", 600, cluster.clock)
    assert (failed.ok, failed.outcome) == (False, "crash-loop"), failed
    assert failed.crash is not None and failed.crash.failure == "max_len_exceeds_kv"
    assert failed.elapsed < 600  # well before the progress deadline


def test_streams_the_server_ends_at_once_back_off_and_failing_watches_fall_back_to_polling(live_sim: Sim) -> None:
    """A server that closes every watch immediately gets a paused resume, not a request loop; one whose watches all
    fail (503, as API Priority and Fairness or a proxy may answer) still gets a verdict, by polling."""
    cluster = live_sim.clusters["a"]
    client = KubeClient.for_context("a", kubeconfig=str(live_sim.kubeconfig))
    client.request("POST", "/apis/apps/v1/namespaces/llm/deployments", body=deployment(replicas=1))
    live_sim.server.contexts["a"].faults.set([{"verb": "watch", "drop_watch_after": 0}])
    seen = counted(live_sim)
    dropped = watch_restored(client, "llm", "llama-8b", 600, cluster.clock)
    assert (dropped.ok, dropped.outcome) == (True, "rolled-out"), dropped
    assert seen["watch"] <= 60, seen  # before the pause: hundreds to thousands of watches in a second

    live_sim.server.contexts["a"].faults.set([{"verb": "watch", "error_rate": 1.0, "error_code": 503}])
    current = client.get_deployment("llm", "llama-8b")
    changed = dict(current, spec=dict(current["spec"], template=dict(current["spec"]["template"])))
    changed["spec"]["template"]["metadata"] = dict(changed["spec"]["template"]["metadata"],
                                                   annotations={"rehearsal/roll": "2"})
    apply_deployment_patch(client, "llm", "llama-8b", json_patch(current, changed))
    polled = watch_restored(client, "llm", "llama-8b", 600, cluster.clock)
    assert (polled.ok, polled.outcome) == (True, "rolled-out"), polled


def test_closing_an_idle_watch_does_not_wait_for_the_servers_next_byte(live_sim: Sim) -> None:
    """Before: outside gevent, ``Feed.close`` waited for the reading thread, blocked in ``recv`` until the server
    wrote again (an idle stream: its next bookmark or its end, seconds here, up to an hour's timeout on a real API
    server); the watched wait returned that much later. The socket is shut down first now."""
    client = KubeClient.for_context("a", kubeconfig=str(live_sim.kubeconfig))
    feed = Feed(client, "/api/v1/namespaces/idle/configmaps", [], queue.Queue())
    feed.list()
    feed.start()
    assert live_sim.clusters["a"].wait_for(lambda: feed.stream is not None, 10), "the watch never opened"
    time.sleep(0.3)  # the reader is in recv on an idle stream: nothing in this namespace changes
    closer = threading.Thread(target=feed.close)
    closer.start()
    closer.join(timeout=3.0)  # the idle stream itself runs for minutes (STREAM_SECONDS)
    assert not closer.is_alive(), "close() waited for the server's next byte"
