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
    assert got.returncode == 0 and json.loads(got.stdout)["failure"] == "host_oom_killed"


def test_bad_inputs_are_one_line_exit_2(cli, tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("  \n")
    binary = tmp_path / "bin.log"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    for path, words in ((tmp_path / "missing.log", "cannot read"), (empty, "empty"), (binary, "binary"),
                        (tmp_path, "cannot read")):
        got = cli("diagnose", "--log", str(path))
        assert got.returncode == 2, (path, got.stdout)
        assert got.stdout == ""
        assert len(got.stderr.strip().splitlines()) == 1 and words in got.stderr, got.stderr
