"""A rehearsal pod's ``sh -c`` script expands its shell variables as sh does before vLLM parses (hostile review 15b,
F7): `MODEL=meta-llama/...` on its own line then `exec vllm serve "$MODEL"` used to run vLLM with the literal
``$MODEL`` ("Invalid repository ID ... '$MODEL'", diagnosed model_unavailable); sh (XCU 2.6.2) gives vLLM the id.
An unquoted ``$ARGS`` is split into its flags (2.6.5); an ``echo ... >&2`` before vLLM is in the pod's log (the
container's stderr is its log); a word the rehearsal cannot expand is refused in a line that says so, never run as
text. `vllm-remedy check` reads the same script the same way (one real CLI run)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from fixtures.check_batch import judge, l40s_deployment
from fixtures.served_pods import run, served

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
IMAGE = "vllm/vllm-openai:v0.8.5"
SH = ["sh", "-c"]
ASSIGNED = (f'echo "starting $(date)" >&2\nMODEL={LLAMA}\nexec vllm serve "$MODEL" --max-model-len 8192 \\\n'
            "  --gpu-memory-utilization 0.90 --max-num-seqs 64 2>&1 | tee /tmp/log\n")
SPLIT = f'ARGS="--max-model-len 4096 --max-num-seqs 8"\nexport M={LLAMA}\nexec vllm serve "${{M}}" $ARGS\n'
UNREAD = "MODEL=$(cat /models/name)\nexec vllm serve \"$MODEL\" --max-model-len 8192\n"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    yield from served(tmp_path_factory.mktemp("kube"))


def test_a_variable_assigned_in_the_script_is_what_vllm_gets_and_echo_is_logged(api) -> None:
    log, code = run(api, "assigned", IMAGE, SH, [ASSIGNED])
    assert code is None, log[-1500:]  # it serves: vLLM got the repository id
    assert "$MODEL" not in log and f"model='{LLAMA}'" in log, log[:1500]
    first = log.splitlines()[0]
    assert re.fullmatch(r"starting \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4}", first), first


def test_an_unquoted_variable_is_split_into_flags(api) -> None:
    log, code = run(api, "split", IMAGE, SH, [SPLIT])
    assert code is None, log[-1500:]
    assert f"model='{LLAMA}'" in log and "max_model_len=4096" in log and "max_num_seqs=8" in log, log[:2000]


def test_a_word_the_rehearsal_cannot_expand_is_refused_not_run_as_text(api) -> None:
    log, code = run(api, "unread", IMAGE, SH, [UNREAD])
    assert code == 1, log
    assert "Invalid repository ID" not in log and "model='$MODEL'" not in log, log
    assert '[vllm-remedy rehearsal] sh: vLLM\'s argument "$MODEL": $(cat /models/name) is a command substitution' \
        in log, log


def test_check_reads_the_assigned_variable_as_the_pod_does(tmp_path: Path) -> None:
    docs = [l40s_deployment("assigned", IMAGE, [ASSIGNED], SH), l40s_deployment("split", IMAGE, [SPLIT], SH)]
    items, _ = judge(docs, tmp_path)
    assigned = items["assigned"]
    assert assigned["status"] == "pass", assigned
    assert assigned["prediction"]["estimate"] is not None, assigned["prediction"]
    # `$ARGS` holds two flags: the tools do not split it, they say they cannot know (the pod splits it)
    assert any("$ARGS" in f["reason"] for f in items["split"]["findings"]), items["split"]["findings"]
