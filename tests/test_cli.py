from __future__ import annotations


def test_unknown_command_is_one_line_exit_2(cli):
    got = cli("no-such-command")
    assert got.returncode == 2
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1, got.stderr
    assert lines[0].startswith("vllm-remedy: error: argument COMMAND: invalid choice: 'no-such-command' (choose from ")


def test_version(cli):
    got = cli("--version")
    assert got.returncode == 0 and got.stdout.startswith("vllm-remedy ")
