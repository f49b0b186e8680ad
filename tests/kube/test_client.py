"""KubeClient: kubeconfig resolution as kubectl does it, retries on 5xx/429/no-answer only, clear errors."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from fixtures.kube_fakeapi import FakeApi, kubeconfig_text
from vllm_remedy.errors import UserError
from vllm_remedy.kube.client import KubeClient, RetryPolicy
from vllm_remedy.kube.config import merge_kubeconfigs, resolve_paths
from vllm_remedy.kube.errors import ConflictError, KubeError, NotFoundError
from vllm_remedy.sim import kubeconfig as sim_kubeconfig
from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment",
          "metadata": {"name": "llama-8b", "namespace": "llm", "uid": "u-1", "generation": 1},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llama-8b"}},
                   "template": {"metadata": {"labels": {"app": "llama-8b"}},
                                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.6.3"}]}}}}


@pytest.fixture
def api():
    fake = FakeApi()
    fake.base = fake.start()
    fake.add("deployments", DEPLOY)
    yield fake
    fake.stop()


def make_client(api: FakeApi, tmp_path: Path, sleeps: list[float] | None = None, **kw) -> KubeClient:
    cfg = tmp_path / "config"
    cfg.write_text(kubeconfig_text(api.base))
    record = sleeps if sleeps is not None else []
    return KubeClient.for_context(kubeconfig=str(cfg), sleep=record.append, **kw)


def test_two_5xx_then_success_retries_with_exponential_backoff(api: FakeApi, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = make_client(api, tmp_path, sleeps, retry=RetryPolicy(attempts=5, base=0.1, factor=2.0))
    api.faults = [503, 500]
    got = client.get_deployment("llm", "llama-8b")
    assert got["metadata"]["name"] == "llama-8b"
    assert [s.path for s in api.seen] == ["/apis/apps/v1/namespaces/llm/deployments/llama-8b"] * 3
    assert sleeps == [0.1, 0.2]
    assert api.seen[0].headers["authorization"] == "Bearer fake-token"


def test_429_is_retried(api: FakeApi, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = make_client(api, tmp_path, sleeps, retry=RetryPolicy(base=0.5))
    api.faults = [429]
    assert client.get_deployment("llm", "llama-8b")["kind"] == "Deployment"
    assert sleeps == [0.5]


def test_403_is_not_retried(api: FakeApi, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = make_client(api, tmp_path, sleeps)
    api.faults = [403]
    with pytest.raises(KubeError) as err:
        client.get_deployment("llm", "llama-8b")
    assert len(api.seen) == 1
    assert sleeps == []
    assert err.value.status == 403
    assert str(err.value) == "fake: GET /apis/apps/v1/namespaces/llm/deployments/llama-8b: HTTP 403: injected 403"


def test_5xx_forever_gives_up_after_attempts(api: FakeApi, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = make_client(api, tmp_path, sleeps, retry=RetryPolicy(attempts=3, base=1, factor=3, cap=2))
    api.faults = [500, 502, 504, 500]
    with pytest.raises(KubeError) as err:
        client.get_deployment("llm", "llama-8b")
    assert len(api.seen) == 3
    assert sleeps == [1, 2]  # 1, min(cap=2, 3)
    assert err.value.status == 504
    assert str(err.value).endswith("HTTP 504: injected 504 (after 3 attempts)")


def test_not_found_names_context_and_object(api: FakeApi, tmp_path: Path) -> None:
    client = make_client(api, tmp_path)
    with pytest.raises(NotFoundError) as err:
        client.get_deployment("llm", "nope")
    assert str(err.value) == 'fake: GET /apis/apps/v1/namespaces/llm/deployments/nope: HTTP 404: ' \
                             'deployments.apps "nope" not found'


def test_connection_refused_is_retried_then_reported(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = tmp_path / "config"
    cfg.write_text(kubeconfig_text(f"http://127.0.0.1:{port}", "dead"))
    sleeps: list[float] = []
    client = KubeClient.for_context(kubeconfig=str(cfg), sleep=sleeps.append, retry=RetryPolicy(attempts=3))
    with pytest.raises(KubeError) as err:
        client.list_pods("llm")
    assert sleeps == [0.25, 0.5]
    assert str(err.value).startswith("dead: GET /api/v1/namespaces/llm/pods: no answer after 3 attempt(s): ")


def test_read_timeout_is_retried(api: FakeApi, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = make_client(api, tmp_path, sleeps, timeout=(1.0, 0.3))
    api.delays = [0.8]  # the first answer comes after the read timeout
    assert client.get_deployment("llm", "llama-8b")["metadata"]["uid"] == "u-1"
    assert len(api.seen) == 2 and sleeps == [0.25]


def test_guarded_patch_422_becomes_conflict_and_changes_nothing(api: FakeApi, tmp_path: Path) -> None:
    client = make_client(api, tmp_path)
    before = dict(api.get("deployments", "llm", "llama-8b"))
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
           {"op": "replace", "path": "/spec/replicas", "value": 3}]
    with pytest.raises(ConflictError) as err:
        client.patch_deployment("llm", "llama-8b", ops)
    assert api.get("deployments", "llm", "llama-8b") == before
    assert str(err.value) == ("fake: deployment llm/llama-8b changed since it was read (HTTP 422); nothing was "
                              "written — re-run to plan against the new state")
    assert api.seen[-1].query == {"fieldManager": "vllm-remedy"}
    assert api.seen[-1].headers["content-type"] == "application/json-patch+json"


def test_any_guarded_json_patch_422_is_a_conflict_not_a_bad_request(api: FakeApi, tmp_path: Path) -> None:
    """Raw requests too (nodes, routes, the game day's own restore): a failed precondition is retryable."""
    client = make_client(api, tmp_path)
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
           {"op": "replace", "path": "/spec/replicas", "value": 3}]
    with pytest.raises(ConflictError) as err:
        client.request("PATCH", "/apis/apps/v1/namespaces/llm/deployments/llama-8b", body=ops,
                       content_type="application/json-patch+json")
    assert err.value.status == 422
    unguarded = [{"op": "replace", "path": "/spec/nope/deeper", "value": 3}]
    with pytest.raises(KubeError) as err:
        client.request("PATCH", "/apis/apps/v1/namespaces/llm/deployments/llama-8b", body=unguarded,
                       content_type="application/json-patch+json")
    assert not isinstance(err.value, ConflictError)


# ---- kubeconfig resolution -----------------------------------------------------------------

def _cfg(path: Path, current: str | None, names: list[str], server: str = "https://x") -> Path:
    ctx = "".join(f"- name: {n}\n  context: {{cluster: {n}, user: {n}}}\n" for n in names)
    cl = "".join(f"- name: {n}\n  cluster: {{server: '{server}/{n}', certificate-authority: ca-{n}.crt}}\n"
                 for n in names)
    us = "".join(f"- name: {n}\n  user: {{token: t}}\n" for n in names)
    cur = f"current-context: {current}\n" if current else ""
    path.write_text(f"apiVersion: v1\nkind: Config\n{cur}clusters:\n{cl}contexts:\n{ctx}users:\n{us}")
    return path


def test_kubeconfig_list_merges_first_wins_and_skips_missing(tmp_path: Path) -> None:
    import yaml

    a = _cfg(tmp_path / "a", "prod", ["prod", "shared"], "https://a")
    b = _cfg(tmp_path / "b", "staging", ["staging", "shared"], "https://b")
    env = {"KUBECONFIG": f"{tmp_path / 'missing'}:{a}:{b}", "HOME": str(tmp_path)}
    source = resolve_paths(None, env)
    assert source.paths == (a, b) and source.origin == "KUBECONFIG"
    merged = merge_kubeconfigs([(p, yaml.safe_load(p.read_text())) for p in source.paths])
    assert merged["current-context"] == "prod"  # first file to set it wins (the Python client lets the last win)
    assert [c["name"] for c in merged["contexts"]] == ["prod", "shared", "staging"]
    shared = next(c for c in merged["clusters"] if c["name"] == "shared")["cluster"]
    assert shared == {"server": "https://a/shared", "certificate-authority": str(tmp_path / "ca-shared.crt")}


def test_missing_context_names_kubeconfig_and_choices(tmp_path: Path) -> None:
    a = _cfg(tmp_path / "a", "prod", ["prod", "staging"])
    with pytest.raises(UserError) as err:
        KubeClient.for_context("dev", environ={"KUBECONFIG": str(a)})
    assert str(err.value) == f"kubeconfig {a} (from KUBECONFIG): context 'dev' not found (available: prod, staging)"


def test_no_current_context(tmp_path: Path) -> None:
    a = _cfg(tmp_path / "a", None, ["prod"])
    with pytest.raises(UserError) as err:
        KubeClient.for_context(kubeconfig=str(a))
    assert str(err.value) == (f"kubeconfig {a}: no current-context set; name one with --context "
                              "(available: prod)")


def test_explicit_kubeconfig_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        KubeClient.for_context(kubeconfig=str(tmp_path / "nope"))
    assert str(err.value) == f"--kubeconfig {tmp_path / 'nope'}: no such file"


def test_kubeconfig_env_pointing_nowhere(tmp_path: Path) -> None:
    env = {"KUBECONFIG": str(tmp_path / "gone"), "HOME": str(tmp_path)}
    with pytest.raises(UserError) as err:
        KubeClient.for_context(environ=env)
    assert str(err.value) == (f"kubeconfig {tmp_path / 'gone'} (from KUBECONFIG; no such file): no kubeconfig "
                              "found; set KUBECONFIG or pass --kubeconfig")


def test_context_in_cluster_without_kubeconfig_means_the_service_account(tmp_path: Path, monkeypatch) -> None:
    """The drift CronJob's hosts are @k8s/in-cluster/<ns>: no kubeconfig in the pod, the service account it is."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    env = {"HOME": str(tmp_path)}
    with pytest.raises(UserError) as err:
        KubeClient.for_context("in-cluster", environ=env)
    assert str(err.value) == "in-cluster config: Service host/port is not set."


def test_default_kubeconfig_under_home(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    cfg = _cfg(tmp_path / ".kube" / "config", "prod", ["prod"])
    (tmp_path / ".kube" / "ca-prod.crt").write_text("")  # relative to the kubeconfig, as kubectl resolves it
    client = KubeClient.for_context(environ={"HOME": str(tmp_path)})
    assert client.context == "prod"
    assert client.source == f"kubeconfig {cfg}"
    assert client.api.configuration.host == "https://x/prod"


def test_server_time_is_the_clusters_clock_from_the_date_header(tmp_path: Path) -> None:
    """The rehearsal cluster's clock starts in 2020 here; the client must read that, not the wall clock."""
    start = 1_577_836_800.0  # 2020-01-01T00:00:00Z
    cluster = Cluster("past", clock=Clock(speed=60, start=start))
    server = SimServer([cluster])
    server.start()
    try:
        path = tmp_path / "kubeconfig"
        sim_kubeconfig.write(path, server.url, ["past"])
        client = KubeClient.for_context("past", str(path))
        first = client.server_time()
        assert start <= first < start + 600
        time.sleep(1.1)
        assert client.server_time() >= first + 30  # 60x: a real second is a simulated minute
    finally:
        server.stop()
