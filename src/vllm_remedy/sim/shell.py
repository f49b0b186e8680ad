"""The commands a rehearsal container can run (``kubectl exec``, a debug pod's command): pure, no I/O.

A real container runs any binary in its image; the rehearsal cluster runs the handful the runbook and
its operators reach for — ``nvidia-smi`` above all — plus the shell basics scripts wrap them in
(``sh -c`` with ``;``, ``&&``, ``||`` and pipes, ``echo``, ``cat``, ``grep``, ``head``, ``tail``, ``env``,
``hostname``, ``true``/``false``/``exit``), and ``tar``/``ls``/``test``/``mkdir`` on the container's
in-memory files (``sim.files``), which is what ``kubectl cp`` runs, and ``chroot /host CMD`` in a node debug pod
(CMD runs as on the node). Anything else fails as a real exec does: exit 127 with the shell's "not found" line
(or the OCI runtime's, when no shell is involved). As a container's command, a program a well-known image lacks
(``sim.image_path``) fails to start; one of an image the cluster does not know is taken to be its server.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from vllm_remedy.sim import files as fs
from vllm_remedy.sim import image_path, nvidia_smi
from vllm_remedy.sim.gpu_view import GpuCard

Result = tuple[int, str, str]  # exit code, stdout, stderr


@dataclass(frozen=True)
class Machine:
    """What a command sees: the container's host name, environment, GPUs and whether host PIDs are visible."""

    hostname: str
    env: dict[str, str] = field(default_factory=dict)
    cards: tuple[GpuCard, ...] = ()
    host_pids: bool = False  # hostPID pods (node debuggers) see every process; others only their own namespace
    now: float | None = None
    files: fs.Files = field(default_factory=dict)  # the container's files (``kubectl cp``), changed in place
    host: Machine | None = None  # the node's own view, for ``chroot`` into a hostPath ``/`` mount
    host_mounts: tuple[str, ...] = ()  # where the node's root is mounted (``/host`` in a node debug pod)


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _nvidia_smi(args: Sequence[str], m: Machine, stdin: str) -> Result:
    if not m.cards:
        return 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that " \
                  "the latest NVIDIA driver is installed and running.\n\n", ""
    try:
        return 0, nvidia_smi.run(args, m.cards, show_processes=m.host_pids, now=m.now), ""
    except nvidia_smi.SmiError as exc:
        return exc.code, str(exc) + "\n", ""


def _grep(args: Sequence[str], m: Machine, stdin: str) -> Result:
    flags = "".join(a[1:] for a in args if a.startswith("-") and len(a) > 1)
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return 2, "", "Usage: grep [OPTION]... PATTERNS [FILE]...\n"
    try:
        pattern = re.compile(words[0], re.I if "i" in flags else 0)
    except re.error as exc:
        return 2, "", f"grep: {exc}\n"
    keep = [line for line in stdin.splitlines() if bool(pattern.search(line)) != ("v" in flags)]
    return (0 if keep else 1), "".join(line + "\n" for line in keep), ""


def _count(args: Sequence[str]) -> int:
    for i, a in enumerate(args):
        if a == "-n" and i + 1 < len(args):
            return int(args[i + 1])
        if re.fullmatch(r"-n?\d+", a):
            return int(a.lstrip("-n"))
    return 10


def _head(args: Sequence[str], m: Machine, stdin: str) -> Result:
    return 0, "".join(line + "\n" for line in stdin.splitlines()[:_count(args)]), ""


def _tail(args: Sequence[str], m: Machine, stdin: str) -> Result:
    n = _count(args)
    return 0, "".join(line + "\n" for line in (stdin.splitlines()[-n:] if n else [])), ""


def _env(args: Sequence[str], m: Machine, stdin: str) -> Result:
    if args:
        value = m.env.get(args[0])
        return (0, value + "\n", "") if value is not None else (1, "", "")
    return 0, "".join(f"{k}={v}\n" for k, v in m.env.items()), ""


def _exit(args: Sequence[str], m: Machine, stdin: str) -> Result:
    raise _Exit(int(args[0]) if args and args[0].lstrip("-").isdigit() else 0)


def _chroot(args: Sequence[str], m: Machine, stdin: str) -> Result:
    """``chroot /host CMD``: run CMD as on the node, whose root a node debug pod mounts (Kubernetes' documented
    way to use one); its files are the mount's, and what CMD writes there lands back in the mount."""
    if not args:
        return 125, "", "chroot: missing operand\n"
    root = "/" + args[0].strip("/")
    if m.host is None or root not in m.host_mounts:
        return 125, "", f"chroot: cannot change root directory to '{args[0]}': No such file or directory\n"
    prefix = root.rstrip("/") + "/"
    view = replace(m.host, files={"/" + p[len(prefix):]: v for p, v in m.files.items() if p.startswith(prefix)})
    argv = list(args[1:]) or ["/bin/sh", "-i"]
    if argv[0] not in SHELLS and _program(argv[0]) not in COMMANDS:
        code, out, err = 127, "", f"chroot: failed to run command '{argv[0]}': No such file or directory\n"
    else:
        code, out, err = run(argv, view, stdin)
    m.files.update({prefix + p.lstrip("/"): v for p, v in view.files.items()})
    return code, out, err


COMMANDS: dict[str, Callable[[Sequence[str], Machine, str], Result]] = {
    "chroot": _chroot,
    "nvidia-smi": _nvidia_smi,
    "echo": lambda a, m, s: (0, " ".join(a) + "\n", ""),
    "cat": lambda a, m, s: fs.cat(a, m.files, s),
    "ls": lambda a, m, s: fs.ls(a, m.files),
    "test": lambda a, m, s: fs.test(a, m.files),
    "[": lambda a, m, s: fs.test(a[:-1] if a and a[-1] == "]" else a, m.files),
    "mkdir": lambda a, m, s: fs.mkdir(a, m.files),
    "tar": lambda a, m, s: fs.tar(a, m.files, s),
    "true": lambda a, m, s: (0, "", ""),
    "false": lambda a, m, s: (1, "", ""),
    "hostname": lambda a, m, s: (0, m.hostname + "\n", ""),
    "env": _env,
    "printenv": _env,
    "grep": _grep,
    "head": _head,
    "tail": _tail,
    "exit": _exit,
}
SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash")


def _program(path: str) -> str:
    return path.rsplit("/", 1)[-1]


_JOINERS = (";", "&&", "||", "|")


def _tokens(text: str) -> list[str]:
    """Shell words and the operators between them (``;``, ``&&``, ``||``, ``|``); ValueError if unbalanced."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    return list(lexer)


_KEYWORDS = frozenset(str.split("while until for do done if then else elif fi case esac in select function { } ! [[ ]] "
                      "cd export set unset read source . wait exec trap eval"))


def _commands(text: str) -> list[list[str]]:
    """The simple commands of ``sh -c text`` (words between ``;``, ``&&``, ``||``, ``|``); ValueError if unbalanced."""
    found: list[list[str]] = [[]]
    for token in _tokens(text):
        if token in _JOINERS:
            found.append([])
        else:
            found[-1].append(token)
    return [words for words in found if words]


def _finite(words: Sequence[str], image: str) -> bool:
    """Whether one simple command ends by itself: a program this module runs, or one the image lacks (it fails)."""
    program = _program(words[0])
    if program in _KEYWORDS:
        return False  # a loop, a builtin we do not run: left to the long-running runtimes
    if program == "chroot":
        return len(words) > 2 and _finite(words[2:], "node")
    if program in COMMANDS:
        return True
    return image_path.lacks(image, program) if image != "node" else program not in image_path.NODE


def runs_to_completion(argv: Sequence[str], image: str = "") -> bool:
    """Whether ``argv`` as a container's command is one this module runs to its end (``nvidia-smi``, ``sh -c
    'nvidia-smi; echo done'``, a program ``image`` lacks, which fails); servers, ``sleep`` loops and programs of
    images this cluster does not know are left to the other runtimes."""
    if not argv:
        return False
    if argv[0] in SHELLS:
        if len(argv) < 3 or argv[1] != "-c":
            return False
        try:
            commands = _commands(argv[2])
        except ValueError:
            return False
        return bool(commands) and all(_finite(words, image) for words in commands)
    return _program(argv[0]) != "exit" and _finite(argv, image)


def start_error(argv: Sequence[str], image: str) -> str | None:
    """containerd's message when ``argv[0]`` is not in ``image`` (the container never starts), else None."""
    if not argv or argv[0] in SHELLS or (_program(argv[0]) in COMMANDS and _program(argv[0]) != "exit"):
        return None
    if not image_path.lacks(image, argv[0]):
        return None
    return ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
            f'failed: unable to start container process: exec: "{argv[0]}": executable file not found in $PATH: '
            "unknown")


def _simple(words: list[str], m: Machine, stdin: str, shell: str) -> Result:
    if not words:
        return 0, "", ""
    run = COMMANDS.get(_program(words[0]))
    if run is None:
        return 127, "", f"{shell}: 1: {words[0]}: not found\n"
    return run(words[1:], m, stdin)


def _pipeline(stages: list[list[str]], m: Machine, stdin: str, shell: str) -> Result:
    code, out, err = 0, stdin, ""
    for words in stages:
        code, out, more = _simple(words, m, out, shell)
        err += more
    return code, out, err


def _unsupported(text: str) -> str | None:
    """The first construct this shell does not run (a redirection, an expansion, a subshell), outside the quotes
    that make it literal; None when there is none. Running it as plain words would print wrong output silently."""
    quote = ""
    for i, ch in enumerate(text):
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            continue
        elif ch in "$`" and not (i and text[i - 1] == "\\"):
            return "an expansion ($…, `…`)"
        elif quote == '"':
            quote = "" if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "<>":
            return f"a redirection ({ch})"
        elif ch in "(){}":
            return f"a group or subshell ({ch})"
    return None


def script(text: str, m: Machine, stdin: str = "", shell: str = "sh") -> Result:
    """``sh -c text``: simple commands joined by ``|``, ``;``, ``&&`` and ``||``; anything else is refused."""
    construct = _unsupported(text)
    if construct is not None:
        return 2, "", (f"{shell}: 1: {construct} is not supported by the rehearsal cluster's shell (it runs simple "
                       "commands joined by ;, &&, || and |)\n")
    try:
        tokens = _tokens(text)
    except ValueError as exc:
        return 2, "", f"{shell}: 1: Syntax error: {exc}\n"
    code, out, err = 0, "", ""
    stages: list[list[str]] = [[]]
    joiner = ";"
    for token in [*tokens, ";"]:
        if token == "|":
            stages.append([])
            continue
        if token not in (";", "&&", "||"):
            stages[-1].append(token)
            continue
        if (joiner == ";" or (joiner == "&&" and code == 0) or (joiner == "||" and code != 0)) and stages[0]:
            try:
                code, more_out, more_err = _pipeline(stages, m, stdin, shell)
            except _Exit as done:
                return done.code, out, err
            out, err = out + more_out, err + more_err
        joiner, stages = token, [[]]
    return code, out, err


def run(argv: Sequence[str], m: Machine, stdin: str = "") -> Result:
    """Run ``argv`` as the container runtime would exec it."""
    if not argv:
        return 1, "", "you must specify at least 1 command\n"
    if argv[0] in SHELLS:
        if len(argv) >= 3 and argv[1] == "-c":
            return script(argv[2], m, stdin, _program(argv[0]))
        return script(stdin, m, "", _program(argv[0]))  # a shell without -c runs what it reads on stdin
    program = _program(argv[0])
    if program not in COMMANDS or program == "exit":
        return 127, "", (f'OCI runtime exec failed: exec failed: unable to start container process: exec: '
                         f'"{argv[0]}": executable file not found in $PATH: unknown\n')
    try:
        return COMMANDS[program](list(argv[1:]), m, stdin)
    except _Exit as done:
        return done.code, "", ""
