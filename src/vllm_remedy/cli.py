"""``vllm-remedy`` entry point: dispatch to ``commands/<name>.py``; user errors are one line, exit 2."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import NoReturn

import vllm_remedy.commands
from vllm_remedy import __version__
from vllm_remedy.errors import UserError

# `vllm-remedy --help` lists these first, in the runbook's order; other command modules follow by name.
ORDER = ("rehearse", "restore", "diagnose", "args", "estimate", "plan", "drift", "expire", "alerts", "gameday")


def command_names() -> list[str]:
    found = {m.name for m in pkgutil.iter_modules(vllm_remedy.commands.__path__) if not m.name.startswith("_")}
    return sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


DESCRIPTION = ("Remediation playbooks for self-hosted vLLM on Kubernetes that crash-loops with CUDA out of memory: "
               "diagnose, predict, fix, rehearse.")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump) and exit 2, like every other user error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vllm-remedy", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"vllm-remedy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in command_names():
        module = importlib.import_module(f"vllm_remedy.commands.{name}")
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.__doc__)
        module.configure(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(words)
    except SystemExit as exc:
        # Terraform's convention reads 2 as "changes found": a mistyped drift flag must stay an error (1).
        if exc.code == 2 and "--detailed-exitcode" in words:
            return 1
        raise
    try:
        return int(args._run(args) or 0)
    except UserError as exc:
        print(f"vllm-remedy: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `vllm-remedy ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
