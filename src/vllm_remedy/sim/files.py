"""A container's files, in memory: what ``kubectl cp`` moves (through ``tar``) and ``cat``/``ls``/``test`` read.

A rehearsal container has no image filesystem; it has the few files a person looks at (``/etc/hostname``,
``/etc/os-release``) and whatever was copied into it, kept per container instance by the cluster. Text
crosses the exec stream as ``str`` decoded with ``surrogateescape``, so tar's binary stream survives the
round trip byte for byte.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
from collections.abc import Sequence

Files = dict[str, bytes]  # absolute path -> content
Result = tuple[int, str, str]
BASE_DIRS = frozenset({"/", "/bin", "/etc", "/home", "/root", "/tmp", "/usr", "/usr/bin", "/var", "/var/log"})
NODE_DIRS = ("bin", "boot", "dev", "home", "lib", "lib64", "mnt", "opt", "proc", "root", "run", "sbin", "srv", "sys",
             "tmp", "usr/bin", "usr/lib", "var/lib/kubelet", "var/log/pods")  # a node's root, as ``ls /host`` lists
OS_RELEASE = b'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n'


def text(data: bytes) -> str:
    """Bytes as the shell's str (binary-safe)."""
    return data.decode("utf-8", "surrogateescape")


def data(value: str) -> bytes:
    """The shell's str back to the bytes a client receives."""
    return value.encode("utf-8", "surrogateescape")


def initial(hostname: str, host_root: Sequence[tuple[str, str]] = ()) -> Files:
    """What every container starts with; ``host_root``: (mount path, node name) of each hostPath ``/`` mounted
    in it (``kubectl debug node/…`` mounts the node's root at ``/host``), which shows the node's own files."""
    files = {"/etc/hostname": f"{hostname}\n".encode(), "/etc/os-release": OS_RELEASE}
    for mount, node in host_root:
        root = _abs(mount)
        files |= {f"{root}/etc/hostname": f"{node}\n".encode(), f"{root}/etc/os-release": OS_RELEASE}
        files |= {f"{root}/{d}/.": b"" for d in NODE_DIRS}
    return files


def _abs(path: str, cwd: str = "/") -> str:
    return posixpath.normpath(posixpath.join(cwd, path)) if path else cwd


def is_dir(files: Files, path: str) -> bool:
    path = _abs(path)
    prefix = path.rstrip("/") + "/"
    return path in BASE_DIRS or any(name.startswith(prefix) for name in files) or f"{prefix}." in files


def _missing(program: str, path: str) -> str:
    return f"{program}: {path}: No such file or directory\n"


def cat(args: Sequence[str], files: Files, stdin: str) -> Result:
    if not args or list(args) == ["-"]:
        return 0, stdin, ""
    out, err, code = "", "", 0
    for path in args:
        if _abs(path) in files:
            out += text(files[_abs(path)])
        else:
            err, code = err + (f"cat: {path}: Is a directory\n" if is_dir(files, path) else _missing("cat", path)), 1
    return code, out, err


def ls(args: Sequence[str], files: Files) -> Result:
    paths = [a for a in args if not a.startswith("-")] or ["/"]
    out, err, code = "", "", 0
    for path in paths:
        full = _abs(path)
        if full in files:
            out += path + "\n"
            continue
        if not is_dir(files, full):
            err, code = err + f"ls: cannot access '{path}': No such file or directory\n", 2
            continue
        prefix = full.rstrip("/") + "/"
        names = {n[len(prefix):].split("/", 1)[0] for n in [*files, *BASE_DIRS] if n.startswith(prefix) and n != prefix}
        out += "".join(f"{n}\n" for n in sorted(names - {"."}))
    return code, out, err


def test(args: Sequence[str], files: Files) -> Result:
    if len(args) == 2 and args[0] in ("-d", "-f", "-e"):
        found = {"-d": is_dir(files, args[1]), "-f": _abs(args[1]) in files,
                 "-e": _abs(args[1]) in files or is_dir(files, args[1])}[args[0]]
        return (0 if found else 1), "", ""
    return 2, "", "test: unsupported expression\n"


def mkdir(args: Sequence[str], files: Files) -> Result:
    for path in (a for a in args if not a.startswith("-")):
        files.setdefault(_abs(path).rstrip("/") + "/.", b"")  # a marker: the directory exists, empty
    return 0, "", ""


def tar(args: Sequence[str], files: Files, stdin: str) -> Result:
    """``tar cf - PATH...`` (kubectl cp from a pod) and ``tar [-]xmf - [-C DIR]`` (kubectl cp into one)."""
    words = [a for a in args if not a.startswith("--")]
    flags = words[0].lstrip("-") if words else ""
    cwd = words[words.index("-C") + 1] if "-C" in words and words.index("-C") + 1 < len(words) else "/"
    if "c" in flags:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as archive:
            for src in words[2:]:
                full = _abs(src)
                chosen = [n for n in sorted(files) if n == full or n.startswith(full.rstrip("/") + "/")]
                if not chosen and not is_dir(files, full):
                    return 2, "", f"tar: {src}: Cannot stat: No such file or directory\ntar: Exiting with failure " \
                                  "status due to previous errors\n"
                for name in chosen:
                    if name.endswith("/."):
                        continue
                    info = tarfile.TarInfo(name.lstrip("/"))
                    info.size, info.mode = len(files[name]), 0o644
                    archive.addfile(info, io.BytesIO(files[name]))
        return 0, text(buf.getvalue()), ""
    if "x" in flags:
        try:
            with tarfile.open(fileobj=io.BytesIO(data(stdin)), mode="r:*") as archive:
                for member in archive.getmembers():
                    target = _abs(member.name, cwd)
                    if member.isdir():
                        files.setdefault(target.rstrip("/") + "/.", b"")
                    elif member.isfile():
                        extracted = archive.extractfile(member)
                        files[target] = extracted.read() if extracted else b""
        except tarfile.TarError as exc:
            return 2, "", f"tar: This does not look like a tar archive ({exc})\n"
        return 0, "", ""
    return 2, "", "tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\n"
