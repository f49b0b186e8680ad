"""vllm-remedy's own metrics: exact exposition text (prometheus_client's), escaping, atomic textfile, counters
that never reset, and promtool's linter on the output."""

from __future__ import annotations

import math
import os
import stat
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_remedy.errors import UserError
from vllm_remedy.metrics import (
    DRIFT_DETECTED,
    REMEDIATIONS,
    Metrics,
    group_url,
    parse_samples,
    write_textfile,
)

ROOT = Path(__file__).resolve().parents[1]
PROMTOOL = ROOT / ".tools/prometheus/usr/bin/promtool"
HOST = "@k8s/prod/llm/llama-8b"
EXPIRES = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)  # 1735787045


def _sample_run() -> Metrics:
    m = Metrics()
    m.drift(HOST, "max-model-len", detected=True)
    m.drift(HOST, "gpu-product", detected=False)
    m.override_expiry(HOST, "enforce-eager", EXPIRES)
    m.remediation("rollback", "applied")
    m.remediation("rollback", "applied")
    m.remediation("budget", "refused")
    m.checked(1735787000.25)
    return m


EXPECTED = """\
# HELP vllm_remedy_drift_detected 1 when the last drift check found this check failing on the host, else 0.
# TYPE vllm_remedy_drift_detected gauge
vllm_remedy_drift_detected{check="gpu-product",host="@k8s/prod/llm/llama-8b"} 0.0
vllm_remedy_drift_detected{check="max-model-len",host="@k8s/prod/llm/llama-8b"} 1.0
# HELP vllm_remedy_override_expiry_timestamp_seconds Unix time at which a timed override (e.g. --enforce-eager) must revert.
# TYPE vllm_remedy_override_expiry_timestamp_seconds gauge
vllm_remedy_override_expiry_timestamp_seconds{flag="enforce-eager",host="@k8s/prod/llm/llama-8b"} 1.735787045e+09
# HELP vllm_remedy_remediations_total Remediation actions taken, by action and result.
# TYPE vllm_remedy_remediations_total counter
vllm_remedy_remediations_total{action="budget",result="refused"} 1.0
vllm_remedy_remediations_total{action="rollback",result="applied"} 2.0
# HELP vllm_remedy_last_check_timestamp_seconds Unix time at which the last drift check completed.
# TYPE vllm_remedy_last_check_timestamp_seconds gauge
vllm_remedy_last_check_timestamp_seconds 1.73578700025e+09
"""  # noqa: E501


def test_render_exact():
    assert _sample_run().render() == EXPECTED


def test_empty_run_renders_nothing_and_families_only_with_samples():
    assert Metrics().render() == ""
    m = Metrics()
    m.checked(EXPIRES)
    assert m.render() == ("# HELP vllm_remedy_last_check_timestamp_seconds Unix time at which the last drift check"
                          " completed.\n# TYPE vllm_remedy_last_check_timestamp_seconds gauge\n"
                          "vllm_remedy_last_check_timestamp_seconds 1.735787045e+09\n")


def test_gauge_set_twice_keeps_last_and_counter_refuses_negative():
    m = Metrics()
    m.drift(HOST, "c", True)
    m.drift(HOST, "c", False)
    assert m.samples[DRIFT_DETECTED] == {(HOST, "c"): 0.0}
    with pytest.raises(ValueError, match="only goes up"):
        m.remediation("a", "b", -1)


def test_naive_datetime_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        Metrics().checked(datetime(2025, 1, 1))
    m = Metrics()
    m.override_expiry(HOST, "enforce-eager", datetime(2025, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
    assert m.samples["vllm_remedy_override_expiry_timestamp_seconds"][(HOST, "enforce-eager")] == 1735689600.0


@pytest.mark.parametrize("value", [0.0, 2.0, 0.5, 1735787000.25, 1e20, math.inf, -math.inf, math.nan])
def test_values_read_back_exactly(value):
    """Timestamps, huge counts and Go's special floats survive the library's format and our reading of it."""
    m = Metrics()
    m.override_expiry(HOST, "enforce-eager", value)
    got = parse_samples(m.render(), "vllm_remedy_override_expiry_timestamp_seconds")[(HOST, "enforce-eager")]
    assert got == value or (math.isnan(value) and math.isnan(got))


def test_escaping():
    m = Metrics()
    m.drift('we"ird\\host\n', "c", True)
    assert 'vllm_remedy_drift_detected{check="c",host="we\\"ird\\\\host\\n"} 1.0' in m.render().splitlines()


@given(host=st.text(), check=st.text(), detected=st.booleans())
def test_parse_reads_back_any_label_value(host, check, detected):
    m = Metrics()
    m.drift(host, check, detected)
    assert parse_samples(m.render(), DRIFT_DETECTED) == {(host, check): float(detected)}


def test_parse_filters_by_grouping_labels_and_skips_junk():
    text = ('# TYPE vllm_remedy_remediations_total counter\n'
            'vllm_remedy_remediations_total{action="rollback",instance="",job="vllm-remedy",result="applied"} 3\n'
            'vllm_remedy_remediations_total{action="rollback",instance="",job="other",result="applied"} 7\n'
            'vllm_remedy_remediations_total{action="x",job="vllm-remedy",result="y"} notanumber\n'
            'vllm_remedy_remediations_total{broken 1\n'
            'push_time_seconds{job="vllm-remedy"} 1.7e+09\n')
    assert parse_samples(text, REMEDIATIONS, {"job": "vllm-remedy"}) == {("rollback", "applied"): 3.0}


def test_textfile_atomic_mode_and_counters_carried(tmp_path):
    path = tmp_path / "vllm-remedy.prom"
    write_textfile(path, _sample_run())
    assert path.read_text() == EXPECTED
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vllm-remedy.prom"]  # no temp file left
    second = Metrics()
    second.remediation("rollback", "applied")
    second.checked(1735787600)
    write_textfile(path, second)
    assert parse_samples(path.read_text(), REMEDIATIONS) == {("rollback", "applied"): 3.0, ("budget", "refused"): 1.0}
    # gauges are replaced, not carried: a drift that was fixed disappears
    assert parse_samples(path.read_text(), DRIFT_DETECTED) == {}
    third = Metrics()
    write_textfile(path, third, keep_counters=False)
    assert path.read_text() == ""


def test_textfile_replace_is_atomic_for_a_reader(tmp_path):
    """A reader holding the old file keeps reading the old content; the new one appears whole."""
    path = tmp_path / "d.prom"
    write_textfile(path, _sample_run())
    with open(path, encoding="utf-8") as old:
        inode = os.fstat(old.fileno()).st_ino
        write_textfile(path, Metrics(), keep_counters=False)
        assert old.read() == EXPECTED
    assert path.stat().st_ino != inode


def test_textfile_errors_are_one_line(tmp_path):
    with pytest.raises(UserError, match=r"x\.txt: node-exporter's textfile collector reads only \*\.prom files"):
        write_textfile(tmp_path / "x.txt", Metrics())
    with pytest.raises(UserError, match=r"missing: no such directory"):
        write_textfile(tmp_path / "missing" / "x.prom", Metrics())
    (tmp_path / "bin.prom").write_bytes(b"\xff\xfe")
    with pytest.raises(UserError, match=r"bin\.prom: cannot read the previous metrics"):
        write_textfile(tmp_path / "bin.prom", Metrics())


@pytest.mark.parametrize("grouping,url", [
    ({}, "http://pg:9091/metrics/job/vllm-remedy"),
    ({"cluster": "prod", "instance": "cron"}, "http://pg:9091/metrics/job/vllm-remedy/cluster/prod/instance/cron"),
    ({"host": "@k8s/prod/llm"}, "http://pg:9091/metrics/job/vllm-remedy/host@base64/QGs4cy9wcm9kL2xsbQ=="),
    ({"instance": ""}, "http://pg:9091/metrics/job/vllm-remedy/instance@base64/="),
    ({"zone": "a b"}, "http://pg:9091/metrics/job/vllm-remedy/zone/a%20b"),
])
def test_group_url(grouping, url):
    assert group_url("http://pg:9091/", "vllm-remedy", grouping) == url


def test_promtool_lints_the_exposition(tmp_path):
    if not PROMTOOL.is_file():
        pytest.skip(f"promtool not at {PROMTOOL}: run scripts/get_tools.py (needs apt-get download)")
    got = subprocess.run([str(PROMTOOL), "check", "metrics"], input=_sample_run().render(), capture_output=True,
                         text=True, timeout=60)
    assert (got.returncode, got.stdout, got.stderr) == (0, "", "")
    # control: the linter does object to a badly named counter
    bad = "# HELP x_things Things.\n# TYPE x_things counter\nx_things 1\n"
    got = subprocess.run([str(PROMTOOL), "check", "metrics"], input=bad, capture_output=True, text=True, timeout=60)
    assert got.returncode == 3 and 'counter metrics should have "_total" suffix' in got.stdout + got.stderr
