"""``vllm-remedy diagnose`` end to end: real logs in, headline/table/evidence/hint out; bad input exits 2."""

from __future__ import annotations

import json


def test_human_output_max_len(cli, data_dir):
    got = cli("diagnose", "--log", str(data_dir / "logs" / "v0.10.2_fp8_max_len_estimate.log"))
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == "max_len_exceeds_kv: max-model-len does not fit in the KV cache"
    table = [" ".join(line.split()) for line in lines[2:8]]
    assert table == ["engine v1", "KV cache 5.59 GiB", "max-model-len 221,000", "needed gib 10.12",
                     "available gib 5.59", "suggested max model len 122080"]
    assert lines[-1] == "hint: step 4: set an explicit --max-model-len ≤ 122080 (or give the KV cache more memory)"
    assert any(line.startswith("  ValueError: To serve at least one request") for line in lines)


def test_json_and_stdin(cli, data_dir):
    text = (data_dir / "logs" / "v0.19.0_planner_meta_llama_llama_3_1_8b_h100_tp1pp1dp1_16384.log").read_text()
    got = cli("diagnose", "--log", "-", "-o", "json", stdin=text)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert (out["failure"], out["kv_cache_tokens"], out["max_concurrency"], out["weights_gib"]) == (
        "none", 476016, 29.05, 14.99)


def test_pod_status_host_oom(cli, data_dir):
    got = cli("diagnose", "--log", str(data_dir / "logs" / "v0.6.3_h100_llama32_vision_truncated.log"),
              "--exit-code", "137", "--reason", "OOMKilled", "-o", "json")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert (out["failure"], out["truncated"], out["weights_gib"]) == ("host_oom_killed", True, 19.8557)
    assert out["hint"] == "step 3: the pod hit its memory limit / node RAM: raise resources.limits.memory"


def test_bad_inputs_are_one_line_exit_2(cli, tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("  \n")
    binary = tmp_path / "bin.log"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    cases = (
        (tmp_path / "missing.log", f"{tmp_path / 'missing.log'}: cannot read the log (No such file or directory); "
                                   "expected a readable file or -"),
        (empty, f"{empty}: the log is empty; expected the output of kubectl logs --previous"),
        (binary, f"{binary}: binary data, expected a text log (kubectl logs output)"),
        (tmp_path, f"{tmp_path}: cannot read the log (Is a directory); expected a readable file or -"),
    )
    for path, message in cases:
        got = cli("diagnose", "--log", str(path))
        assert got.returncode == 2, (path, got.stdout)
        assert got.stdout == ""
        assert got.stderr.splitlines() == [f"vllm-remedy: error: {message}"]


def test_empty_stdin_names_stdin(cli):
    got = cli("diagnose", "--log", "-", stdin="")
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr.splitlines() == [
        "vllm-remedy: error: <stdin>: the log is empty; expected the output of kubectl logs --previous"]


def test_exit_137_with_another_reason_is_left_to_the_log(cli, data_dir):
    path = str(data_dir / "logs" / "v0.10.2_fp8_max_len_estimate.log")
    got = cli("diagnose", "--log", path, "--exit-code", "137", "--reason", "Error", "-o", "json")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert (out["failure"], out["hint"]) == (
        "max_len_exceeds_kv", "step 4: set an explicit --max-model-len ≤ 122080 (or give the KV cache more memory)")
