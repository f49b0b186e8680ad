"""Prometheus's HTTP API, the one call confirm needs: an instant query (``GET /api/v1/query``).

Why our own ten lines and not a client library: one read-only GET with a timeout, whose every failure must
become one line an operator can act on — the server unreachable, the query rejected (Prometheus's own
``errorType``/``error``), an answer that is not the Prometheus API (a wrong URL behind an ingress), or a
result that is not an instant vector or scalar. What the numbers mean is the caller's (``remedies.confirm``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from vllm_remedy.errors import UserError


class PrometheusError(UserError):
    """The query did not give numbers: the server unreachable, the query rejected, or not the Prometheus API."""


@dataclass(frozen=True)
class Sample:
    """One series of an instant query's result: its labels (``{}`` for a scalar or an aggregate) and value."""

    labels: dict[str, str]
    value: float

    def name(self) -> str:
        """``{code="503", route="llm"}`` (``{}`` without labels), how a reason names the series."""
        return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(self.labels.items())) + "}"


def instant_query(base_url: str, query: str, timeout: float) -> list[Sample]:
    """Evaluate ``query`` at the server's now; [] when nothing matched. NaN values (0/0: no requests in the
    window) are kept as NaN for the caller to judge. Raises :class:`PrometheusError`."""
    url = f"{base_url.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode({"query": query, "timeout": f"{timeout:g}s"})
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:  # Prometheus answers 400/422/503 with its JSON error
        answer = _json(exc.read())
        if isinstance(answer, dict) and answer.get("status") == "error":
            raise PrometheusError(f"Prometheus at {base_url} rejected the query ({answer.get('errorType')}: "
                                  f"{answer.get('error')})") from None
        raise PrometheusError(f"{base_url} answered HTTP {exc.code}, not the Prometheus API") from None
    except (urllib.error.URLError, OSError) as exc:  # refused, DNS, timeout
        raise PrometheusError(f"Prometheus at {base_url} is unreachable ({getattr(exc, 'reason', exc)})") from None
    answer = _json(body)
    if not isinstance(answer, dict) or answer.get("status") != "success" or not isinstance(answer.get("data"), dict):
        raise PrometheusError(f"{base_url} did not answer as the Prometheus API (/api/v1/query)")
    return _samples(answer["data"], base_url)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return None


def _samples(data: dict[str, Any], base_url: str) -> list[Sample]:
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar" and isinstance(result, list) and len(result) == 2:
        return [Sample({}, _number(result[1], base_url))]
    if kind == "vector" and isinstance(result, list):
        return [Sample({str(k): str(v) for k, v in (s.get("metric") or {}).items()},
                       _number((s.get("value") or [None, None])[1], base_url)) for s in result]
    raise PrometheusError(f"the query returns a {kind}, not an instant vector or scalar (drop the range "
                          "selector, or wrap it in rate()/sum())")


def _number(text: Any, base_url: str) -> float:
    try:
        return float(text)  # Prometheus spells NaN and ±Inf as Python does
    except (TypeError, ValueError):
        raise PrometheusError(f"{base_url} answered a sample value {text!r}, not a number") from None
