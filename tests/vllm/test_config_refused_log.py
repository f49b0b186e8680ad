"""``diagnose`` reads vLLM's configuration refusals as ``config_refused``: the real batched-tokens refusal of
vllm-project/vllm#28981 (tests/data/logs/SOURCES.md), and a bare ValueError/AssertionError only when the traceback
above it reads a ``VLLM_*`` variable (else it stays unknown)."""

from __future__ import annotations

import json

from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log

LOG = "tests/data/logs/v0.11_cpu_arm_batched_tokens_refused.log"


def test_the_published_refusal_is_config_refused_with_its_figures(cli):
    got = cli("diagnose", "--log", LOG, "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["failure"] == "config_refused", data["failure"]
    assert (data["failure_detail"]["max_num_batched_tokens"], data["failure_detail"]["max_model_len"]) == (2048, 40960)
    text = cli("diagnose", "--log", LOG).stdout
    assert "set --max-num-batched-tokens ≥ 40960 (it was 2048" in text, text


def test_a_bare_error_without_a_vllm_variable_stays_unknown():
    text = ("Traceback (most recent call last):\n"
            '  File "/app/start.py", line 3, in <module>\n'
            "    workers = int(os.getenv('WORKERS'))\n"
            "ValueError: invalid literal for int() with base 10: 'false'\n")
    assert parse_startup_log(text).failure is Failure.UNKNOWN


def test_an_earlier_traceback_does_not_name_a_later_error():
    text = ("Traceback (most recent call last):\n"
            '  File "/x/vllm/envs.py", line 638, in <lambda>\n'
            '    lambda: bool(int(os.getenv("VLLM_USE_V1", "1"))),\n'
            "Traceback (most recent call last):\n"
            '  File "/app/start.py", line 3, in <module>\n'
            "    assert ready\n"
            "AssertionError\n")
    assert parse_startup_log(text).failure is not Failure.CONFIG_REFUSED
