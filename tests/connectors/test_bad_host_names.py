"""One bad @k8s host name fails only that host, at connect, through the REAL pyinfra CLI and ``vllm-remedy
drift`` on the rehearsal cluster; kubectl's aliases for a kind (``sts``, ``deployments``, ``isvc``) name the kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures import pyinfra_run
from fixtures.pyinfra_run import Rehearsal, host_lines, plain
from fixtures.sts_world import RESTORE, STS_HOST, llama_set
from vllm_remedy.connectors.hosts import parse_target
from vllm_remedy.connectors.k8s import K8sConnector

rehearsal = pyinfra_run.rehearsal
CRON = "@k8s/rehearsal/llm/cronjob/llama-sts"
UNKNOWN = (f"{CRON}: unknown kind 'cronjob'; expected one of deployment, statefulset, leaderworkerset, "
           "inferenceservice")


def mix(tmp: Path, kubeconfig: Path) -> str:
    path = tmp / "mix.py"
    path.write_text(f'hosts = ([{STS_HOST!r}, {CRON!r}], {{"kubeconfig": {str(kubeconfig)!r}}})\n')
    return str(path)


def test_an_unknown_kind_fails_its_host_and_the_other_runs(rehearsal: Rehearsal, tmp_path: Path) -> None:
    llama_set(rehearsal)
    inv = mix(tmp_path, rehearsal.kubeconfig)
    got = rehearsal.pyinfra(inv, RESTORE, "--dry", stdin="\n")  # pyinfra asks whether to go on without it
    assert "pyinfra error" not in plain(got.stderr), got.stderr
    assert host_lines(got.stderr, CRON) == [UNKNOWN], got.stderr
    assert ".py line" not in plain(got.stderr)
    assert "noop: nothing to restore: revision 1: no pod is crash-looping" in host_lines(got.stderr, STS_HOST)


def test_drift_reports_the_bad_host_as_an_error_and_checks_the_rest(rehearsal: Rehearsal, tmp_path: Path,
                                                                    cli) -> None:
    llama_set(rehearsal)
    got = cli("drift", "-i", mix(tmp_path, rehearsal.kubeconfig), "-o", "json")
    assert "cannot load the inventory" not in got.stderr, got.stderr
    hosts = {h["host"]: h for h in json.loads(got.stdout)["hosts"]}
    assert hosts[CRON]["status"] == "Error" and UNKNOWN in hosts[CRON]["error"], hosts[CRON]
    assert hosts[STS_HOST]["status"] != "Error", hosts[STS_HOST]


@pytest.mark.parametrize(("word", "kind"), [
    ("sts", "statefulset"), ("statefulsets", "statefulset"), ("StatefulSet", "statefulset"),
    ("deploy", "deployment"), ("deployments", "deployment"), ("lws", "leaderworkerset"),
    ("isvc", "inferenceservice"), ("inferenceservices", "inferenceservice"),
])
def test_kubectls_aliases_name_the_canonical_kind(word: str, kind: str) -> None:
    assert parse_target(f"prod/llm/{word}/llama").kind == kind
    [(name, _data, _groups)] = list(K8sConnector.make_names_data(f"prod/llm/{word}/llama"))
    assert name == ("@k8s/prod/llm/llama" if kind == "deployment" else f"@k8s/prod/llm/{kind}/llama")
