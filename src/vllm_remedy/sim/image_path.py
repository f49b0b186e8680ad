"""Which programs the well-known base images carry in ``$PATH``, so a command the image lacks fails as it does.

A rehearsal container has no image filesystem, so for an arbitrary image (an app, a server) the cluster cannot
tell a missing program from a long-running one and lets it run. For the small images people reach for in
``kubectl debug`` and ``kubectl run`` — busybox, alpine, Debian, Ubuntu and NVIDIA's CUDA bases — it can: a
program absent from the image fails the container as containerd does (``StartError``, exit 128, "executable
file not found in $PATH"), or the shell's "not found" (exit 127) inside ``sh -c``. ``NODE`` is what a node's
root filesystem offers, for ``chroot /host <cmd>`` in a node debug pod.
"""

from __future__ import annotations


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_COMMON = _set(
    "[ arch awk basename cat chgrp chmod chown chroot cksum clear cmp cp cut date dd df diff dirname dmesg du "
    "echo egrep env expr false fgrep find free getent grep groups gunzip gzip head hostname id install ip kill "
    "killall less ln logger login ls lsof md5sum mkdir mkfifo mknod mktemp more mount mv nice nl nohup nproc "
    "nslookup od passwd paste pgrep pidof ping pkill printenv printf ps pwd readlink realpath renice reset rm "
    "rmdir sed seq sh sha1sum sha256sum sha512sum sleep sort split stat strings stty su sync tac tail tar tee "
    "test time timeout top touch tr true truncate tty umount uname uniq unlink unzip uptime users vi watch wc "
    "which whoami xargs yes zcat")
BUSYBOX = _COMMON | _set(
    "ash arp brctl hexdump ifconfig ip netstat nc route telnet traceroute udhcpc wget xxd")
ALPINE = BUSYBOX | _set("apk")
DEBIAN = _COMMON | _set(
    "apt apt-get bash dash dpkg getconf hostid ldd locale lsblk mawk nproc perl runuser script setsid "
    "ss su sulogin tempfile zgrep") - _set("ip nslookup ping netstat ifconfig lsof vi wget")
CUDA = DEBIAN | _set("nvidia-smi nvidia-debugdump nvidia-persistenced")
NODE = CUDA | _set(
    "ip ping lsof ss ethtool iptables journalctl systemctl crictl ctr containerd kubelet nvidia-container-cli "
    "lspci lsmod modprobe dmidecode curl wget vi vim")

_IMAGES: tuple[tuple[str, frozenset[str]], ...] = (
    ("busybox", BUSYBOX), ("alpine", ALPINE), ("debian", DEBIAN), ("ubuntu", DEBIAN), ("nvidia/cuda", CUDA))


def programs(image: str) -> frozenset[str] | None:
    """The programs in ``image``'s ``$PATH``, or None for an image this module does not know."""
    name = image.split("@", 1)[0]
    repo = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    for prefix in ("docker.io/library/", "docker.io/", "library/", "nvcr.io/"):
        repo = repo.removeprefix(prefix)
    for known, found in _IMAGES:
        if repo == known:
            return found
    return None


def lacks(image: str, program: str) -> bool:
    """Whether ``image`` is known and has no ``program`` (a path is looked up by its last part)."""
    found = programs(image)
    return found is not None and program.rsplit("/", 1)[-1] not in found
