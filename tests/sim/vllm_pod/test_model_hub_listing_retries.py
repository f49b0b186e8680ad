"""A rehearsal pod of vLLM 0.7.3-0.10.2 whose Hub listing fails logs vLLM's two "Error retrieving file list" records
(``with_retry``, 2 s apart, each from its own line of config.py) before its traceback (``sim.vllm_pod.hub_retry``);
a gated repository, an offline pod and the releases that do not list (0.6.x, 0.11.0 on) print none, and ``diagnose``
reads through the retry: an attempt vLLM makes again is no failure, the last one names the Hub it could not reach.

End to end: the rehearsal cluster served over HTTP and driven with the official ``kubernetes`` client, the pods asking
tests/fixtures/hf_hub_server through HF_ENDPOINT (a pod's own HF_ENDPOINT at a closed port for the refused
connection), the logs read back with the real CLI's ``diagnose``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fixtures import hf_hub_server
from fixtures.hf_hub_server import SMOLLM2_CONFIG, HubServer, Repo, hub_server
from fixtures.served_pods import run, served

MISSING, FLAKY = "acme-corp/SmolLM2-Listing-Missing", "acme-corp/SmolLM2-Listing-500"
GOOD, GATED = "acme-corp/SmolLM2-Listing-Good", "acme-corp/SmolLM2-Listing-Gated"
CLOSED = "http://127.0.0.1:1"  # nothing listens there: the connection is refused at once
RETRIED = "Error retrieving file list: "
_STAMP = re.compile(r"\b(\d{2}-\d{2} \d{2}:\d{2}:\d{2})\b")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with pytest.MonkeyPatch.context() as mp, hub_server({
            FLAKY: Repo({"config.json": SMOLLM2_CONFIG}, misbehave="error-500"),
            GOOD: Repo({"config.json": SMOLLM2_CONFIG}),
            GATED: Repo({"config.json": SMOLLM2_CONFIG}, gated=True)}) as server:
        hf_hub_server.use_hub(mp, server, tmp_path_factory.mktemp("hf"), timeout=1, drop_token=True)
        yield server


@pytest.fixture(scope="module")
def api(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from served(tmp_path_factory.mktemp("kube"))


#: case -> (the pod's env, its arguments after --model's value)
CASES: dict[str, tuple[dict[str, str], list[str]]] = {
    "missing": ({}, [MISSING]),
    "refused": ({"HF_ENDPOINT": CLOSED}, [GOOD]),
    "error-500": ({}, [FLAKY]),
    "revision": ({}, [GOOD, "--revision", "no-such-branch"]),
    "gated": ({}, [GATED]),
    "offline": ({"HF_HUB_OFFLINE": "1"}, [GOOD]),
}
#: (release, case, the retried and the last record's source as the release prints it, the listing's error as the
#: records begin it, diagnose's reason): config.py@0.7.3 l.102/100, @0.8.5 l.103/101, @0.9.2 l.130/128,
#: @0.10.2 l.278/276
LISTED = [
    ("0.7.3", "missing", ("config.py:102] ", "config.py:100] "), "404 Client Error.", "repository_not_found"),
    ("0.8.5", "refused", ("[config.py:103] ", "[config.py:101] "),
     f"HTTPConnectionPool(host='127.0.0.1', port=1): Max retries exceeded with url: /api/models/{GOOD}/tree/main",
     "hub_unreachable"),
    ("0.9.2", "revision", ("[config.py:130] ", "[config.py:128] "), "404 Client Error.", "revision_not_found"),
    ("0.10.2", "error-500", ("[config.py:278] ", "[config.py:276] "),
     "500 Server Error: Internal Server Error for url: ", "hub_unreachable"),
]


def start(api: Any, name: str, version: str, case: str) -> tuple[str, int | None]:
    env, model = CASES[case]
    return run(api, name, f"vllm/vllm-openai:v{version}", None, ["--model", *model, "--max-model-len", "4096"],
               env=env)


def diagnosed(cli: Any, tmp_path: Path, log: str) -> dict[str, Any]:
    saved = tmp_path / "pod.log"
    saved.write_text(log)
    got = cli("diagnose", "--log", str(saved), "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def _at(line: str) -> datetime:
    found = _STAMP.search(line)
    assert found is not None, line
    return datetime.strptime(f"2026-{found[1]}", "%Y-%m-%d %H:%M:%S")


@pytest.mark.parametrize("version, case, sources, error, reason", LISTED, ids=[f"{v}-{c}" for v, c, *_ in LISTED])
def test_the_listing_is_tried_twice_2_s_apart_before_the_traceback(
        api, hub, cli, tmp_path: Path, version: str, case: str, sources: tuple[str, str], error: str,
        reason: str) -> None:
    """Before: the traceback came 3 s in with no record of vLLM's retry."""
    log, code = start(api, f"listed-{case}-{version.replace('.', '-')}", version, case)
    assert code == 1, log[-2000:]
    lines = log.splitlines()
    first, last = [i for i, line in enumerate(lines) if RETRIED in line]  # each record's first line
    traceback = next(i for i, line in enumerate(lines) if "Traceback (most recent call last):" in line)
    retried = next(i for i in range(first, last) if lines[i].endswith(", retrying 1 of 2"))
    assert f"ERROR {_at(lines[first]):%m-%d %H:%M:%S} {sources[0]}{RETRIED}{error}" in lines[first], lines[first]
    assert f"ERROR {_at(lines[last]):%m-%d %H:%M:%S} {sources[1]}{RETRIED}{error}" in lines[last], lines[last]
    assert all(sources[0] in line for line in lines[first:retried + 1]), lines[first:retried + 1]
    assert all(sources[1] in line and "retrying" not in line for line in lines[last:traceback]), lines[last:traceback]
    assert retried + 1 == last < traceback
    assert (_at(lines[last]) - _at(lines[first])).total_seconds() == 2.0, (lines[first], lines[last])
    assert diagnosed(cli, tmp_path, log)["failure_detail"]["reason"] == reason


NOT_LISTED = [("0.6.6", "refused"), ("0.11.0", "refused"), ("0.8.5", "gated"), ("0.8.5", "offline")]


@pytest.mark.parametrize("version, case", NOT_LISTED, ids=[f"{v}-{c}" for v, c in NOT_LISTED])
def test_no_retry_where_nothing_is_listed_or_the_listing_passes(api, hub, version: str, case: str) -> None:
    """0.6.6 asks file_exists, 0.11.0 transformers first; a gated repository's files are listed, offline the listing
    is empty: none logs a retry (a guard: this held before too)."""
    log, code = start(api, f"unlisted-{case}-{version.replace('.', '-')}", version, case)
    assert code == 1 and "Traceback (most recent call last):" in log, log[-2000:]
    assert RETRIED not in log, log[-3000:]


def test_diagnose_is_not_misled_by_an_attempt_vllm_makes_again(api, hub, cli, tmp_path: Path) -> None:
    """A listing that failed once and answered the second time: the retried record spliced into a start that served
    (same release) is no failure. Before: model_unavailable, from the 500 the record names."""
    failed, code = start(api, "retry-then-500", "0.10.2", "error-500")
    assert code == 1, failed[-2000:]
    retry = [line for line in failed.splitlines() if line.endswith(", retrying 1 of 2") and RETRIED in line]
    assert len(retry) == 1, failed[-3000:]
    served_log, code = run(api, "retry-then-good", "vllm/vllm-openai:v0.10.2", None,
                           ["--model", GOOD, "--max-model-len", "4096"])
    assert code is None, served_log[-2000:]
    lines = served_log.splitlines()
    at = next(i for i, line in enumerate(lines) if "non-default args" in line) + 1
    spliced = "\n".join([*lines[:at], *retry, *lines[at:]]) + "\n"
    assert diagnosed(cli, tmp_path, spliced)["failure"] == diagnosed(cli, tmp_path, served_log)["failure"] != \
        "model_unavailable"


def test_the_last_attempts_record_names_the_hub_it_could_not_reach(api, hub, cli, tmp_path: Path) -> None:
    """A log cut right after the last attempt's record, before its traceback (requests' words without the exception's
    name). Before: an unknown failure."""
    refused, code = start(api, "retry-cut", "0.8.5", "refused")
    assert code == 1, refused[-2000:]
    cut = refused[:refused.index("Traceback (most recent call last):")]
    data = diagnosed(cli, tmp_path, cut)
    assert (data["failure"], data["failure_detail"]["reason"]) == ("model_unavailable", "hub_unreachable"), data
