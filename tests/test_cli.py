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


def test_cli_never_imports_pyinfra_cli_which_monkey_patches_gevent_on_import():
    """pyinfra_cli/__init__ runs gevent's patch_all: imported after urllib3/ssl it breaks TLS (RecursionError).
    The drift runner imports it only in its own child process."""
    import subprocess
    import sys

    code = ("import sys; from vllm_remedy.cli import build_parser; build_parser(); "
            "import vllm_remedy.drift.checks, vllm_remedy.drift.report; "
            "print('pyinfra_cli' in sys.modules, 'gevent.monkey' in sys.modules and "
            "sys.modules['gevent.monkey'].is_module_patched('ssl'))")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert got.stdout.split() == ["False", "False"], got.stderr
