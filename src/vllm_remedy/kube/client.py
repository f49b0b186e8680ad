"""One API client per kube context, speaking raw JSON with timeouts and bounded retries.

Why raw JSON: the rest of ``kube/`` is pure functions over dicts exactly as the server sent them
(kubectl's undo patch copies the ReplicaSet template verbatim; typed models would drop or rename
fields). Why our own retries: an incident is when the API server is most likely to be slow or
flapping, so 5xx, 429 and connection failures/timeouts are retried with exponential back-off; any
other 4xx is an answer (forbidden, not found, conflict) and retrying it would only delay the error.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import quote

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from vllm_remedy.errors import UserError
from vllm_remedy.kube import config as kcfg
from vllm_remedy.kube.errors import ConflictError, KubeError, NotFoundError

T = TypeVar("T")

log = logging.getLogger(__name__)

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
FIELD_MANAGER = "vllm-remedy"


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` tries in all; the n-th retry waits ``min(cap, base * factor**(n-1))`` seconds."""

    attempts: int = 5
    base: float = 0.25
    factor: float = 2.0
    cap: float = 8.0

    def delay(self, retry: int, retry_after: str | None = None) -> float:
        """Seconds before the next retry: the server's Retry-After when given, else capped backoff."""
        if retry_after:
            try:
                return min(self.cap, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.cap, self.base * self.factor ** (retry - 1))


def _guarded(body: Any, content_type: str) -> bool:
    """A JSON patch with a ``test`` op: its 422 means "the object changed", not "your request is malformed"."""
    return content_type == JSON_PATCH and isinstance(body, list) and any(
        isinstance(op, dict) and op.get("op") == "test" for op in body)


def _retryable_status(status: int) -> bool:
    return status >= 500 or status == 429


_NO_ANSWER: tuple[type[BaseException], ...] = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)


class KubeClient:
    """Raw-JSON access to one cluster; every error message starts with the context name."""

    def __init__(self, api_client: k8s_client.ApiClient, *, context: str, source: str = "",
                 timeout: float | tuple[float, float] = (5.0, 30.0), retry: RetryPolicy | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.api = api_client
        self.context = context
        self.source = source
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._sleep = sleep

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def for_context(cls, context: str | None = None, kubeconfig: str | None = None, *,
                    in_cluster: bool | None = None, environ: Mapping[str, str] | None = None,
                    **kwargs: Any) -> KubeClient:
        """kubectl's choice of cluster: ``--kubeconfig``, else ``KUBECONFIG``, else ~/.kube/config, else in-cluster.

        The context name ``in-cluster`` with no kubeconfig to define it means the pod's service account
        explicitly (hosts ``@k8s/in-cluster/<ns>`` in the drift CronJob's inventory).
        """
        configuration = k8s_client.Configuration()
        if in_cluster:
            return cls._in_cluster(configuration, **kwargs)
        source = kcfg.resolve_paths(kubeconfig, environ)
        if not source.paths or source.origin == "KUBECONFIG-missing":
            if in_cluster is None and context == kcfg.IN_CLUSTER:
                return cls._in_cluster(configuration, **kwargs)
            if in_cluster is None and not context and kcfg.in_cluster_available(environ):
                return cls._in_cluster(configuration, **kwargs)
            raise UserError(f"{source.describe()}: no kubeconfig found; set KUBECONFIG or pass --kubeconfig")
        merged = kcfg.load_merged(source)
        name = kcfg.pick_context(merged, context, source)
        try:
            k8s_config.load_kube_config_from_dict(merged, context=name, client_configuration=configuration,
                                                  persist_config=False)
        except (ConfigException, OSError, ValueError) as exc:
            raise UserError(f"{source.describe()}: context {name!r}: {exc}".replace("\n", " ")) from exc
        return cls(cls._api_client(configuration), context=name, source=source.describe(), **kwargs)

    @classmethod
    def _in_cluster(cls, configuration: k8s_client.Configuration, **kwargs: Any) -> KubeClient:
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise UserError(f"in-cluster config: {exc}") from exc
        return cls(cls._api_client(configuration), context=kcfg.IN_CLUSTER, source="in-cluster service account",
                   **kwargs)

    @staticmethod
    def _api_client(configuration: k8s_client.Configuration) -> k8s_client.ApiClient:
        configuration.retries = False  # urllib3 must not retry underneath our own back-off
        return k8s_client.ApiClient(configuration=configuration)

    # ---- the one request path ---------------------------------------------------------
    def request(self, method: str, path: str, *, query: Sequence[tuple[str, str]] | None = None,
                body: Any = None, content_type: str = "application/json", expect_json: bool = True,
                timeout: float | tuple[float, float] | None = None) -> Any:
        """Send one API request (retrying per policy); the decoded JSON, or text when ``expect_json`` is false."""
        query = list(query or [])
        where = f"{self.context}: {method} {path}"
        for attempt in range(1, self.retry.attempts + 1):
            last = attempt == self.retry.attempts
            try:
                status, headers, data = self._send(method, path, query, body, content_type, timeout)
            except _NO_ANSWER as exc:
                if isinstance(exc, urllib3.exceptions.SSLError) or last:
                    raise KubeError(f"{where}: no answer after {attempt} attempt(s): {exc}") from exc
                wait = self.retry.delay(attempt)
                log.warning("%s: %s; retrying in %.2fs", where, exc, wait)
                self._sleep(wait)
                continue
            if 200 <= status < 300:
                text = data.decode("utf-8", errors="replace")
                return json.loads(text) if expect_json and text else text
            if _retryable_status(status) and not last:
                wait = self.retry.delay(attempt, headers.get("Retry-After"))
                log.warning("%s: HTTP %d; retrying in %.2fs", where, status, wait)
                self._sleep(wait)
                continue
            raise self._error(status, data, where, attempt, guarded=_guarded(body, content_type))
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, method: str, path: str, query: list[tuple[str, str]], body: Any, content_type: str,
              timeout: float | tuple[float, float] | None) -> tuple[int, Mapping[str, str], bytes]:
        headers = {"Accept": "application/json, */*", "Content-Type": content_type}
        request_timeout = timeout if timeout is not None else self.timeout
        if hasattr(self.api, "param_serialize"):  # kubernetes >= 37 (openapi-generator v7 client)
            prepared = self.api.param_serialize(method=method, resource_path=path, query_params=query or None,
                                                header_params=headers, body=body, auth_settings=["BearerToken"])
            resp = self.api.call_api(*prepared, _request_timeout=request_timeout)
            return resp.status, resp.headers, resp.read() or b""
        try:  # pragma: no cover - legacy client (kubernetes < 37)
            raw = self.api.call_api(path, method, query_params=query, header_params=headers, body=body,
                                    auth_settings=["BearerToken"], _preload_content=False,
                                    _return_http_data_only=True, _request_timeout=request_timeout)
            return raw.status, raw.headers, raw.data or b""
        except ApiException as exc:  # pragma: no cover
            return int(exc.status or 0), exc.headers or {}, (exc.body or "").encode() if isinstance(
                exc.body, str) else (exc.body or b"")

    def server_time(self) -> float:
        """The cluster's clock (epoch seconds) from the API server's ``Date`` header.

        Durations the runbook measures ("Ready and stable for 30 minutes", toggle expiry) are in the
        cluster's time, not ours: a real cluster agrees with the wall clock, the rehearsal cluster runs
        compressed. Falls back to the local clock when the server sends no Date.
        """
        for attempt in range(1, self.retry.attempts + 1):
            try:
                status, headers, _ = self._send("GET", "/version", [], None, "application/json", None)
            except _NO_ANSWER as exc:
                if attempt == self.retry.attempts:
                    raise KubeError(f"{self.context}: GET /version: no answer: {exc}") from exc
                self._sleep(self.retry.delay(attempt))
                continue
            date = headers.get("Date") if status < 500 else None
            if date:
                return parsedate_to_datetime(date).timestamp()
            if status < 500:
                break
        return time.time()

    def live(self) -> KubeClient:
        """A client that reads the cluster as it is now: this one (a read snapshot answers with its base)."""
        return self

    def renew(self, path: str | None = None) -> None:
        """Forget what was read before a change at ``path`` (every read, without one): nothing to forget here."""

    def watch(self, path: str, query: Sequence[tuple[str, str]], *, seconds: int,
              opened: Callable[[Any], None] | None = None) -> Iterator[dict[str, Any]]:
        """One watch request on the collection at ``path``: its events (``{"type", "object"}``) as the server sends
        them, until it ends the stream (about ``seconds`` later). One request however long the stream lasts.
        ``opened`` gets the response, whose ``close()`` ends the stream early from another thread."""
        where = f"{self.context}: WATCH {path}"
        query = [*query, ("watch", "1"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(int(seconds)))]
        connect = self.timeout[0] if isinstance(self.timeout, tuple) else self.timeout
        try:
            status, response = self._open(path, query, (connect, seconds + 30.0))
            if not 200 <= status < 300:
                raise self._error(status, response.read() or b"", where, 1)
            if opened is not None:
                opened(response)
            pending = b""
            for chunk in response.stream(65536, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except _NO_ANSWER as exc:
            raise KubeError(f"{where}: stream lost: {exc}") from exc
        except ValueError as exc:
            raise KubeError(f"{where}: not a JSON event: {exc}") from exc

    def _open(self, path: str, query: list[tuple[str, str]], timeout: tuple[float, float]) -> tuple[int, Any]:
        """(status, the unread urllib3 response) of a GET whose body is read as it arrives."""
        headers = {"Accept": "application/json"}
        if hasattr(self.api, "param_serialize"):  # kubernetes >= 37 answers unread (preload_content=False)
            prepared = self.api.param_serialize(method="GET", resource_path=path, query_params=query,
                                                header_params=headers, auth_settings=["BearerToken"])
            resp = self.api.call_api(*prepared, _request_timeout=timeout)
            return resp.status, resp.response
        raw = self.api.call_api(path, "GET", query_params=query, header_params=headers,  # pragma: no cover
                                auth_settings=["BearerToken"], _preload_content=False,
                                _return_http_data_only=True, _request_timeout=timeout)
        return raw.status, raw  # pragma: no cover

    def derived(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``: a value computed from this client's reads alone. A read snapshot (``kube.snapshot``)
        computes it once per run and hands every host the same object, so it must only be read (verbs serialise
        it); a live client computes it afresh."""
        return compute()

    @staticmethod
    def _error(status: int, data: bytes, where: str, attempts: int, *, guarded: bool = False) -> KubeError:
        """The typed error for a failed answer: a 409, or a 422 on a JSON patch carrying a ``test`` op (the
        apiserver's answer when a resourceVersion precondition fails), is a ConflictError for every caller."""
        text = data.decode("utf-8", errors="replace")
        message, reason, body = text.strip()[:300], "", None
        try:
            body = json.loads(text)
            if isinstance(body, dict):
                message = str(body.get("message") or message)
                reason = str(body.get("reason") or "")
        except ValueError:
            pass
        tail = f" (after {attempts} attempts)" if attempts > 1 else ""
        cls: type[KubeError] = KubeError
        if status == 404:
            cls = NotFoundError
        elif status == 409 or (status == 422 and guarded):
            cls = ConflictError
        return cls(f"{where}: HTTP {status}: {message}{tail}", status=status, reason=reason, body=body)

    # ---- typed helpers over raw JSON --------------------------------------------------
    @staticmethod
    def object_path(namespace: str, resource: str, name: str | None = None, group: str = "apps/v1") -> str:
        """The API path of a namespaced collection or object (name URL-quoted), e.g.
        ``/apis/apps/v1/namespaces/llm/deployments/llama-8b``; ``group="v1"`` for the core group."""
        base = "/api/v1" if group == "v1" else f"/apis/{group}"
        path = f"{base}/namespaces/{quote(namespace, safe='')}/{resource}"
        return f"{path}/{quote(name, safe='')}" if name else path

    def get_deployment(self, namespace: str, name: str) -> dict[str, Any]:
        """The Deployment every remedy starts from."""
        return self.request("GET", self.object_path(namespace, "deployments", name))

    def list_deployments(self, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
        """Deployments matching a selector, for targets naming a whole namespace."""
        return self._items(self.object_path(namespace, "deployments"), label_selector)

    def list_replicasets(self, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
        """ReplicaSets under a selector: they hold the rollout history's pod templates."""
        return self._items(self.object_path(namespace, "replicasets"), label_selector)

    def list_pods(self, namespace: str | None, label_selector: str = "", field_selector: str = "") -> list[dict]:
        """Pods in a namespace, or cluster-wide with None (GPU accounting needs every holder)."""
        path = self.object_path(namespace, "pods", group="v1") if namespace else "/api/v1/pods"
        return self._items(path, label_selector, field_selector)

    def list_nodes(self, label_selector: str = "") -> list[dict[str, Any]]:
        """Nodes, to count GPUs and find where a crash-looping pod could go."""
        return self._items("/api/v1/nodes", label_selector)

    def get_node(self, name: str) -> dict[str, Any]:
        """One node, for the GPU product of the node a pod runs on."""
        return self.request("GET", f"/api/v1/nodes/{quote(name, safe='')}")

    def pod_log(self, namespace: str, pod: str, container: str | None = None, *, previous: bool = False,
                tail_lines: int | None = None, limit_bytes: int | None = None) -> str:
        """``kubectl logs [--previous] [--tail] [--limit-bytes]``; a 400 (no previous container) raises KubeError
        with the server's words."""
        query = [("container", container)] if container else []
        if previous:
            query.append(("previous", "true"))
        if tail_lines is not None:
            query.append(("tailLines", str(tail_lines)))
        if limit_bytes is not None:
            query.append(("limitBytes", str(limit_bytes)))
        return self.request("GET", self.object_path(namespace, "pods", pod, group="v1") + "/log", query=query,
                            expect_json=False)

    def pod_proxy(self, namespace: str, pod: str, port: int, path: str) -> str:
        """``GET pods/<pod>:<port>/proxy/<path>``: what the pod's HTTP server answers, through the API server (needs
        ``get`` on ``pods/proxy``); a 403/503 raises KubeError with the server's words."""
        base = self.object_path(namespace, "pods", pod, group="v1")
        return self.request("GET", f"{base}:{int(port)}/proxy/{path.lstrip('/')}", expect_json=False)

    def patch_deployment(self, namespace: str, name: str, body: Any, *, content_type: str = JSON_PATCH,
                         dry_run: bool = False, field_manager: str = FIELD_MANAGER) -> dict[str, Any]:
        """PATCH a Deployment; a conflict (409, or 422 from a failed ``test`` op) says what to do about it."""
        query = [("fieldManager", field_manager)]
        if dry_run:
            query.insert(0, ("dryRun", "All"))
        try:
            return self.request("PATCH", self.object_path(namespace, "deployments", name), query=query, body=body,
                                content_type=content_type)
        except ConflictError as exc:
            raise ConflictError(
                f"{self.context}: deployment {namespace}/{name} changed since it was read "
                f"(HTTP {exc.status}); nothing was written — re-run to plan against the new state",
                status=exc.status, reason=exc.reason, body=exc.body) from exc

    def _items(self, path: str, label_selector: str = "", field_selector: str = "") -> list[dict[str, Any]]:
        query = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        got = self.request("GET", path, query=query)
        return list(got.get("items") or [])
