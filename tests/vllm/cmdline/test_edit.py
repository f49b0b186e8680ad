"""Editing keeps the form: only the needed tokens change, in the container's own style."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import find_server


def server(container: dict):
    return find_server({"containers": [container]})


def reparse(container: dict) -> dict[str, str]:
    return server(container).flags


def test_list_space_style_edits_value_token_only() -> None:
    c = {"name": "v", "command": ["vllm", "serve"], "args": ["m", "--max-model-len", "131072", "--port", "8000"]}
    new = server(c).edit(set={"max-model-len": "16384"})
    assert new == {"name": "v", "command": ["vllm", "serve"],
                   "args": ["m", "--max-model-len", "16384", "--port", "8000"]}


def test_eq_style_keeps_spelling_and_new_flag_follows_style() -> None:
    c = {"name": "v", "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
         "args": ["--model=$(MODEL_ID)", "--gpu_memory_utilization=0.95", "--max-num-seqs=4"]}
    new = server(c).edit(set={"gpu-memory-utilization": "0.9", "max-model-len": "16384"})
    assert new["args"] == ["--model=$(MODEL_ID)", "--gpu_memory_utilization=0.9", "--max-num-seqs=4",
                           "--max-model-len=16384"]
    assert new["command"] is not c["command"] and new["command"] == c["command"]


def test_prefix_abbreviation_is_edited_in_place() -> None:
    c = {"name": "v", "command": ["vllm", "serve", "m", "--max-num-seq", "1024"]}
    assert server(c).edit(set={"max-num-seqs": "32"})["command"] == ["vllm", "serve", "m", "--max-num-seq", "32"]


def test_short_alias_set_and_unset() -> None:
    c = {"name": "v", "command": ["vllm", "serve", "m", "-tp", "2", "-O3"]}
    assert server(c).edit(set={"tp": "4"})["command"] == ["vllm", "serve", "m", "-tp", "4", "-O3"]
    assert server(c).edit(set={"optimization-level": "0"})["command"] == ["vllm", "serve", "m", "-tp", "2", "-O0"]
    assert server(c).edit(unset=["tensor-parallel-size"])["command"] == ["vllm", "serve", "m", "-O3"]


def test_boolean_true_false_and_no_forms() -> None:
    c = {"name": "v", "command": ["vllm", "serve", "m", "--no-enable-prefix-caching", "--enable-chunked-prefill=False"]}
    new = server(c).edit(set={"enable-prefix-caching": "true", "enable-chunked-prefill": "TRUE",
                              "enforce-eager": "true"})
    assert new["command"] == ["vllm", "serve", "m", "--enable-prefix-caching", "--enable-chunked-prefill",
                              "--enforce-eager"]
    # default-on flag: false needs the --no- form
    c2 = {"name": "v", "command": ["vllm", "serve", "m", "--enable-prefix-caching"]}
    assert server(c2).edit(set={"enable-prefix-caching": "false"})["command"] == [
        "vllm", "serve", "m", "--no-enable-prefix-caching"]
    # off-by-default flag: false removes it (older vLLM has no --no-enforce-eager)
    c3 = {"name": "v", "command": ["vllm", "serve", "m", "--enforce-eager", "--port", "1"]}
    assert server(c3).edit(set={"enforce-eager": "false"})["command"] == ["vllm", "serve", "m", "--port", "1"]


def test_legacy_boolean_with_separate_value_token_is_normalised() -> None:
    c = {"name": "v", "command": ["vllm", "serve", "m", "--enable-chunked-prefill", "False", "--port", "1"]}
    assert server(c).flags["enable-chunked-prefill"] == "false"
    assert server(c).edit(set={"enable-chunked-prefill": "true"})["command"] == [
        "vllm", "serve", "m", "--enable-chunked-prefill", "--port", "1"]


def test_duplicates_collapse_to_the_last_occurrence() -> None:
    c = {"name": "v", "command": ["vllm", "serve", "m", "--gpu_memory_utilization", "0.8", "--max-model-len", "4096",
                                  "--gpu-memory-utilization=0.85"]}
    new = server(c).edit(set={"gpu-memory-utilization": "0.9"})
    assert new["command"] == ["vllm", "serve", "m", "--max-model-len", "4096", "--gpu-memory-utilization=0.9"]
    assert server(c).edit(unset=["gpu-memory-utilization"])["command"] == [
        "vllm", "serve", "m", "--max-model-len", "4096"]


def test_setting_current_value_changes_nothing() -> None:
    c = {"name": "v", "command": ["vllm", "serve", "m", "--max-model-len", "4096", "--enforce-eager"]}
    assert server(c).edit(set={"max-model-len": "4096", "enforce-eager": "true"}) == c


def test_shell_string_rewrites_only_the_vllm_statement() -> None:
    script = ("set -e; echo 'vllm serve not-this --max-model-len 1'\n"
              "python3 -m vllm.entrypoints.openai.api_server --model \"$M\" --max-model-len='8192' --enforce-eager\n"
              "echo done --max-model-len 3\n")
    c = {"name": "v", "command": ["/bin/sh", "-c", script]}
    new = server(c).edit(set={"max-model-len": "16384", "kv-cache-dtype": "fp8"}, unset=["enforce-eager"])
    assert new["command"][2] == (
        "set -e; echo 'vllm serve not-this --max-model-len 1'\n"
        "python3 -m vllm.entrypoints.openai.api_server --model \"$M\" --max-model-len='16384' --kv-cache-dtype fp8\n"
        "echo done --max-model-len 3\n")


def test_continuation_lines_keep_their_layout() -> None:
    script = "exec vllm serve m \\\n  --port 8000 \\\n  --max-model-len 4096\n"
    new = server({"name": "v", "command": ["bash", "-c", script]}).edit(set={"max-num-seqs": "64"})
    assert new["command"][2] == (
        "exec vllm serve m \\\n  --port 8000 \\\n  --max-model-len 4096 \\\n  --max-num-seqs 64\n")


def test_passthrough_edits_where_the_flag_already_is() -> None:
    c = {"name": "v", "command": ["bash", "-c", 'vllm serve $M --port 8000 --dtype half "$@"', "bash"],
         "args": ["--max-model-len", "8192"]}
    new = server(c).edit(set={"max-model-len": "4096", "dtype": "bfloat16"})
    assert new["command"][2] == 'vllm serve $M --port 8000 --dtype bfloat16 "$@"'
    assert new["args"] == ["--max-model-len", "4096"]
    # a new flag goes to the end of the vLLM statement, after "$@", so it wins
    added = server(c).edit(set={"max-num-seqs": "32"})
    assert added["command"][2] == 'vllm serve $M --port 8000 --dtype half "$@" --max-num-seqs 32'
    assert added["args"] == c["args"]


def test_json_value_is_requoted_safely_in_shell() -> None:
    c = {"name": "v", "command": ["sh", "-c", "vllm serve m --port 1"]}
    new = server(c).edit(set={"speculative-config": '{"method":"ngram"}'})
    assert new["command"][2] == "vllm serve m --port 1 --speculative-config '{\"method\":\"ngram\"}'"
    assert reparse(new)["speculative-config"] == '{"method":"ngram"}'


def test_positional_model_can_be_replaced() -> None:
    c = {"name": "v", "command": ["vllm", "serve", "old/m", "--port", "1"]}
    new = server(c).edit(set={"model": "new/m"})
    assert new["command"] == ["vllm", "serve", "new/m", "--port", "1"]


@pytest.mark.parametrize(("set_", "unset", "message"), [
    ({"enforce-eager": "yes"}, [], "enforce-eager: boolean flag takes true or false, got 'yes'"),
    ({"": "1"}, [], "(empty): not a flag name"),
    ({"max model len": "1"}, [], "max model len: not a flag name"),
])
def test_bad_edits_are_user_errors(set_, unset, message) -> None:
    c = {"name": "v", "command": ["vllm", "serve", "m"]}
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        server(c).edit(set=set_, unset=unset)


def test_unknown_flags_pass_through_untouched() -> None:
    c = {"name": "v", "command": ["python3", "-m", "dynamo.vllm", "--model", "m", "--dyn-thing", "x", "--flagonly",
                                  "--max-model-len", "100"]}
    s = server(c)
    assert s.flags == {"dyn-thing": "x", "flagonly": "true", "max-model-len": "100"}
    assert s.edit(set={"max-model-len": "200"})["command"] == [
        "python3", "-m", "dynamo.vllm", "--model", "m", "--dyn-thing", "x", "--flagonly", "--max-model-len", "200"]
