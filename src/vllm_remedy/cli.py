"""``vllm-remedy`` entry point: dispatch to ``commands/<name>.py``; user errors are one line, exit 2."""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import pkgutil
import sys
import textwrap
from collections.abc import Sequence
from types import ModuleType
from typing import IO, Any, NoReturn

import vllm_remedy.commands
from vllm_remedy import __version__
from vllm_remedy.errors import UserError

#: Where a command module without ``ORDER`` goes in `vllm-remedy --help`: after the runbook's commands.
LAST = 1000
#: The exit status when the reader of the output went away (`vllm-remedy check ... | head`): 128 + SIGPIPE, what a
#: shell reports for a process the signal ended. Never 0: a verdict nobody read is not a success.
CLOSED_PIPE = 141
WRITE_FAILED = 74  # sysexits' EX_IOERR: the output could not be written, so no verdict was given


def command_modules() -> list[ModuleType]:
    """Every command module in ``commands/`` (``_`` marks a helper), in each module's own ``ORDER``.

    The listing comes from the modules themselves, so `--help` can neither name a command that is gone nor
    miss a new one.
    """
    found = [importlib.import_module(f"vllm_remedy.commands.{m.name}")
             for m in pkgutil.iter_modules(vllm_remedy.commands.__path__) if not m.name.startswith("_")]
    return sorted(found, key=lambda mod: (getattr(mod, "ORDER", LAST), mod.NAME))


def command_names() -> list[str]:
    """The subcommands `vllm-remedy --help` lists, in that order."""
    return [mod.NAME for mod in command_modules()]


DESCRIPTION = ("Remediation playbooks for self-hosted vLLM on Kubernetes that crash-loops with CUDA out of memory: "
               "diagnose, predict, fix, rehearse.")
EPILOG = """\
Examples (no cluster needed):
  vllm-remedy diagnose --log previous.log
  vllm-remedy estimate --model meta-llama/Llama-3.1-8B-Instruct --gpu NVIDIA-L40S --max-model-len 16384
  vllm-remedy plan -f deploy.yaml --policy policies/llama-8b.yaml
On the built-in rehearsal cluster:
  vllm-remedy rehearse
  vllm-remedy sim up --background

`vllm-remedy COMMAND --help` shows a command's options and examples."""


def split_doc(doc: str | None) -> tuple[str | None, str | None]:
    """A command module's docstring → (description, epilog): the first paragraph above the options, the
    rest (details, examples, exit codes) below them, both with their line breaks kept."""
    text = inspect.cleandoc(doc or "")
    head, _, rest = text.partition("\n\n")
    return head or None, rest.strip() or None


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written where layout matters: an indented line (an example, a list item)
    is kept verbatim on its own line, and so are blank lines and a heading ending in ``:`` right above indented
    lines; plain prose is refilled to the terminal width."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        prose: list[str] = []

        def flush() -> None:
            if prose:
                out.extend(textwrap.wrap(" ".join(prose), width, initial_indent=indent, subsequent_indent=indent))
                prose.clear()

        for line in text.splitlines():
            if not line.strip() or line[0].isspace():
                heading = prose.pop() if line.strip() and prose and prose[-1].endswith(":") else None
                flush()
                if heading:  # "Examples:" right above its indented lines: a line of its own
                    out.append(indent + heading)
                out.append(indent + line.rstrip() if line.strip() else "")
            else:
                prose.append(line.strip())
        flush()
        return "\n".join(out)


class _Parser(argparse.ArgumentParser):
    """argparse, but help keeps examples and lists one per line (``HelpFormatter``), and a usage error is
    one line (no usage dump) and exit 2, like every other user error."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        """argparse swallows write errors here, so `--help | true` exited 0: a closed pipe must reach ``main``."""
        if message:
            (file or sys.stderr).write(message)


def named_module(word: str) -> ModuleType | None:
    """The command module a first word names, imported alone; None for anything else (``--help``, a typo).

    Each command imports what it needs (the Kubernetes client, pydantic, the memory model); importing every
    one to run a single command cost 0.4 s of CPU per call, most of `vllm-remedy args show`'s run time."""
    names = {m.name for m in pkgutil.iter_modules(vllm_remedy.commands.__path__) if not m.name.startswith("_")}
    if word not in names:
        return None
    module = importlib.import_module(f"vllm_remedy.commands.{word}")
    return module if word == module.NAME else None


def build_parser(only: ModuleType | None = None) -> argparse.ArgumentParser:
    """The whole CLI's parser, or (``only``) the top level with that one command: its parse is the same."""
    parser = _Parser(prog="vllm-remedy", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"vllm-remedy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in [only] if only is not None else command_modules():
        description, epilog = split_doc(module.__doc__)
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=description, epilog=epilog)
        module.configure(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with stdout closed (`>&-`): no verdict can be read, so none is claimed
        print("vllm-remedy: error: standard output is closed", file=sys.stderr)
        return CLOSED_PIPE
    try:
        try:
            args = build_parser(named_module(words[0]) if words else None).parse_args(words)
        except SystemExit as exc:
            sys.stdout.flush()  # `--help | true`: the closed pipe is seen here
            # Terraform's convention reads 2 as "changes found": a mistyped drift flag must stay an error (1).
            if exc.code == 2 and "--detailed-exitcode" in words:
                return 1
            raise
        code = _run(args)
        sys.stdout.flush()  # a reader that closed early fails here, not in the interpreter's exit flush
    except BrokenPipeError:  # `vllm-remedy ... | head`
        return _reader_gone()
    except OSError as exc:  # stdout on a full disk (`> /dev/full`): the verdict was not written
        _reader_gone()
        print(f"vllm-remedy: error: cannot write standard output: {exc.strerror or exc}", file=sys.stderr)
        return WRITE_FAILED
    return code


def _run(args: argparse.Namespace) -> int:
    """The command's exit code; a user error is one line on stderr and its own code."""
    try:
        return int(args._run(args) or 0)
    except UserError as exc:
        print(f"vllm-remedy: error: {exc}", file=sys.stderr)
        return exc.exit_code


def _reader_gone() -> int:
    """Exit status after a write to a closed pipe: 141, whatever the command's verdict was, since nobody read it.

    stdout is pointed at /dev/null first, as Python's docs on SIGPIPE recommend, so the interpreter's own flush at
    exit finds nowhere broken to write and does not raise again (an "Exception ignored" and exit 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (captured in-process): nothing left to flush
        pass
    return CLOSED_PIPE

if __name__ == "__main__":
    sys.exit(main())
