"""``prometheus.instant_query`` and confirm's error-rate verdict against a real Prometheus server scraping gateway
counters (tests/fixtures/prometheus_server.py): numbers, and one clear line for each way there are none."""

from __future__ import annotations

import math

import pytest

from fixtures import prometheus_server
from fixtures.prometheus_server import METRIC, Prometheus, error_rate_query, free_port
from vllm_remedy.policy import GatewayErrorRate
from vllm_remedy.prometheus import PrometheusError, instant_query
from vllm_remedy.remedies.confirm import error_rate_check

prometheus = prometheus_server.prometheus


def rule(url: str, query: str, limit: float = 0.01) -> GatewayErrorRate:
    return GatewayErrorRate.model_validate({"prometheus": url, "query": query, "max": limit})


def verdict(server: Prometheus, query: str, url: str | None = None) -> tuple[bool, str]:
    """What confirm says for ``query``: the code path of operations/confirm.py's gateway_checks."""
    wanted = rule(url or server.url, query)
    try:
        samples = instant_query(wanted.prometheus, wanted.query, wanted.timeout.total_seconds())
    except PrometheusError as exc:
        return error_rate_check(wanted, None, str(exc))
    return error_rate_check(wanted, [(s.name(), s.value) for s in samples])


def test_a_ratio_below_the_limit_passes_with_its_figure(prometheus: Prometheus) -> None:
    samples = instant_query(prometheus.url, error_rate_query("steady"), 10)
    assert len(samples) == 1 and samples[0].labels == {}
    assert 0.0005 <= samples[0].value <= 0.002, samples  # 0.1 % of the gateway's requests fail
    ok, text = verdict(prometheus, error_rate_query("steady"))
    assert ok, text
    assert text.startswith("gateway error rate 0.00") and text.endswith(f"(limit 0.01, query at {prometheus.url})")


def test_a_ratio_above_the_limit_fails_naming_the_worst_series(prometheus: Prometheus) -> None:
    by_route = f'sum by (route) (rate({METRIC}{{code=~"5.."}}[3s])) / sum by (route) (rate({METRIC}[3s]))'
    ok, text = verdict(prometheus, by_route)
    assert not ok
    assert text.startswith("gateway error rate 0.") and ' in {route="failing"} (worst of 3 series) ' in text, text
    worst = float(text.split()[3])
    assert 0.15 <= worst <= 0.25, text  # 20 % of the failing route's requests


def test_a_query_prometheus_rejects_is_its_own_error_line(prometheus: Prometheus) -> None:
    with pytest.raises(PrometheusError) as caught:
        instant_query(prometheus.url, f"sum(rate({METRIC}[3s]", 10)
    assert str(caught.value).startswith(f"Prometheus at {prometheus.url} rejected the query (bad_data: ")
    assert "parse error" in str(caught.value)
    ok, text = verdict(prometheus, f"sum(rate({METRIC}[3s]")
    assert not ok and text.startswith("gateway error rate unknown: Prometheus at ") and "parse error" in text


def test_no_data_fails_the_check(prometheus: Prometheus) -> None:
    """No series matched: a misspelt metric or a gateway Prometheus does not scrape is no evidence of health."""
    assert instant_query(prometheus.url, error_rate_query("absent"), 10) == []
    ok, text = verdict(prometheus, error_rate_query("absent"))
    assert not ok
    assert text.startswith("gateway error rate: the query returned no data — no series matched"), text


def test_no_request_in_the_window_is_nan_and_fails_the_check(prometheus: Prometheus) -> None:
    samples = instant_query(prometheus.url, error_rate_query("idle"), 10)
    assert len(samples) == 1 and math.isnan(samples[0].value)
    ok, text = verdict(prometheus, error_rate_query("idle"))
    assert not ok and text.startswith("gateway error rate: NaN — no request in the query's window"), text


def test_an_unreachable_server_is_one_line(prometheus: Prometheus) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    ok, text = verdict(prometheus, error_rate_query("steady"), url=url)
    assert not ok
    assert text.startswith(f"gateway error rate unknown: Prometheus at {url} is unreachable (")
    assert "refused" in text.lower(), text


def test_a_range_vector_is_refused_saying_what_to_do(prometheus: Prometheus) -> None:
    with pytest.raises(PrometheusError, match=r"returns a matrix, not an instant vector or scalar"):
        instant_query(prometheus.url, f"{METRIC}[3s]", 10)


def test_a_scalar_is_a_number(prometheus: Prometheus) -> None:
    assert [(s.labels, s.value) for s in instant_query(prometheus.url, "scalar(vector(0.25))", 10)] == [({}, 0.25)]


def test_a_url_that_is_not_prometheus_says_so(prometheus: Prometheus) -> None:
    gateway = f"http://127.0.0.1:{prometheus.gateway.server_address[1]}"  # answers text to every path
    with pytest.raises(PrometheusError, match=r"did not answer as the Prometheus API"):
        instant_query(gateway, "up", 10)
