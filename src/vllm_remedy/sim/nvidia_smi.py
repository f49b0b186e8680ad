"""``nvidia-smi`` output in the 550+ driver layout, from ``gpu_view`` cards (pure: text in, text out).

The runbook's step 3 reads this table by eye ("what is on the GPU the pod got?"), so the layout is the
real one: the banner with driver and CUDA version, one block per card (Name, Bus-Id, Memory-Usage in MiB)
and the Processes table (PID, process name, GPU memory). ``-L``, ``--query-gpu`` and
``--query-compute-apps`` with ``--format=csv[,noheader][,nounits]`` cover what scripts ask for; ``-i`` picks
cards and ``-q -d MEMORY`` prints the FB/BAR1 memory blocks a person reads when the table looks wrong.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from vllm_remedy.sim.gpu_view import CUDA, DRIVER, GpuCard

WIDTH = 91
POWER_CAP_W = {"L40S": 350, "L4": 72, "A10G": 300, "A100": 400, "H100": 700, "H200": 700, "T4": 70}
_RULE = "+" + "-" * (WIDTH - 2) + "+"
_CARD_RULE = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
_HEADER = ("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
           "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
           "|                                         |                        |               MIG M. |",
           "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|")
_PROC_HEADER = ("| Processes:" + " " * (WIDTH - 13) + "|",
                "|  GPU   GI   CI        PID   Type   Process name" + " " * 30 + "GPU Memory |",
                "|        ID   ID" + " " * 63 + "Usage      |",
                "|" + "=" * (WIDTH - 2) + "|")
QUERY_UNITS = {"memory.used": "MiB", "memory.total": "MiB", "memory.free": "MiB", "used_memory": "MiB",
               "used_gpu_memory": "MiB"}


BAR1_MIB = {"L40S": 65536, "L4": 32768, "A10G": 32768, "A100": 131072, "H100": 131072, "H200": 262144, "T4": 256}
RESERVED_MIB = 512  # FB memory the driver keeps for itself: -q shows it, the table folds it away
_ALIASES = {"--id": "-i", "--display": "-d", "--query": "-q", "--list-gpus": "-L"}
_VALUED = ("-i", "--id", "-d", "--display")


class SmiError(ValueError):
    """A flag nvidia-smi would reject; the message is its own error line, ``code`` its exit status."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def _cap(name: str) -> int:
    return next((w for key, w in POWER_CAP_W.items() if name.endswith(" " + key)), 300)


def _card(card: GpuCard) -> list[str]:
    busy = card.used_mib > 0
    temp, perf, watts = (41, "P0", 0.24) if busy else (30, "P8", 0.09)
    cap = _cap(card.name)
    power = f"{round(cap * watts)}W"
    return [f"|{card.index:>4}  {card.name:<31}On  |{card.bus_id:>19} Off |{'0':>21} |",
            f"| N/A  {temp:>3}C    {perf}{power:>16} / {str(cap) + 'W':>5} |"
            f"{card.used_mib:>8}MiB / {card.total_mib:>6}MiB |{0:>7}%{'Default':>13} |",
            "|" + " " * 41 + "|" + " " * 24 + "|" + f"{'N/A':>21} |",
            _CARD_RULE]


def _process_name(name: str) -> str:
    return name if len(name) <= 40 else "..." + name[-37:]


def table(cards: Sequence[GpuCard], *, show_processes: bool, now: float | None = None) -> str:
    """The default ``nvidia-smi`` screen; ``show_processes`` is False inside a container without the host's PIDs."""
    stamp = time.asctime(time.gmtime(time.time() if now is None else now))  # "Thu Dec  3 16:40:12 2026"
    lines = [stamp + " " * 7, _RULE,
             f"| NVIDIA-SMI {DRIVER:<23}Driver Version: {DRIVER:<15}CUDA Version: {CUDA:<9}|",
             "|" + _CARD_RULE[1:], *_HEADER]
    for card in cards:
        lines += _card(card)
    lines += [" " * WIDTH, _RULE, *_PROC_HEADER]
    procs = [(card.index, p) for card in cards for p in card.processes] if show_processes else []
    for index, proc in procs:
        lines.append(f"|  {index:>3}   N/A  N/A{proc.pid:>10}{'C':>7}   {_process_name(proc.name):<40}"
                     f"{proc.used_mib:>9}MiB |")
    if not procs:
        lines.append("|  No running processes found" + " " * (WIDTH - 30) + "|")
    lines.append(_RULE)
    return "\n".join(lines) + "\n"


def _csv(rows: list[dict[str, str | int]], fields: list[str], fmt: set[str]) -> str:
    out = []
    if "noheader" not in fmt:
        out.append(", ".join(f"{f} [{QUERY_UNITS[f]}]" if f in QUERY_UNITS and "nounits" not in fmt else f
                             for f in ("used_gpu_memory" if f == "used_memory" else f for f in fields)))
    for row in rows:
        cells = []
        for f in fields:
            value = str(row[f])
            cells.append(value + (" " + QUERY_UNITS[f] if f in QUERY_UNITS and "nounits" not in fmt else ""))
        out.append(", ".join(cells))
    return "".join(line + "\n" for line in out)


def _options(args: Sequence[str]) -> dict[str, str]:
    """Flags to values: ``-i 0``, ``--id=0``, ``-q``, ``-d MEMORY``, ``--query-gpu=a,b`` (long names as short)."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(args):
        if args[i] in _VALUED and i + 1 < len(args):
            opts[_ALIASES.get(args[i], args[i])], i = args[i + 1], i + 2
            continue
        key, _, value = args[i].partition("=")
        opts[_ALIASES.get(key, key)] = value
        i += 1
    return opts


def _select(cards: Sequence[GpuCard], ids: str) -> list[GpuCard]:
    """``-i``: cards by index, UUID or PCI bus id (comma-separated); their indexes stay the node's."""
    wanted = [w.strip().lower() for w in ids.split(",") if w.strip()]
    chosen = [c for c in cards if {str(c.index), c.uuid.lower(), c.bus_id.lower(), c.bus_id[4:].lower()} & set(wanted)]
    if not wanted or len(chosen) < len(wanted):
        raise SmiError("No devices were found", code=6)
    return chosen


def _field(name: str, value: object, indent: int = 0) -> str:
    return f"{' ' * indent}{name:<{42 - indent}}: {value}"


def query_memory(cards: Sequence[GpuCard], now: float | None = None, attached: int | None = None) -> str:
    """``nvidia-smi -q -d MEMORY``: the FB (framebuffer) and BAR1 blocks of each card, in the driver's layout;
    ``attached``: how many GPUs the machine has (``-i`` shows fewer blocks, not a smaller count)."""
    stamp = time.asctime(time.gmtime(time.time() if now is None else now))
    count = len(cards) if attached is None else attached
    lines = ["", "==============NVSMI LOG==============", "", _field("Timestamp", stamp),
             _field("Driver Version", DRIVER), _field("CUDA Version", CUDA), "", _field("Attached GPUs", count)]
    for c in cards:
        bar1 = next((m for key, m in BAR1_MIB.items() if c.name.endswith(" " + key)), 256)
        lines += [f"GPU {c.bus_id}", "    FB Memory Usage", _field("Total", f"{c.total_mib} MiB", 8),
                  _field("Reserved", f"{RESERVED_MIB} MiB", 8), _field("Used", f"{c.used_mib} MiB", 8),
                  _field("Free", f"{max(0, c.total_mib - RESERVED_MIB - c.used_mib)} MiB", 8),
                  "    BAR1 Memory Usage", _field("Total", f"{bar1} MiB", 8), _field("Used", "1 MiB", 8),
                  _field("Free", f"{bar1 - 1} MiB", 8), "    Conf Compute Protected Memory Usage",
                  _field("Total", "0 MiB", 8), _field("Used", "0 MiB", 8), _field("Free", "0 MiB", 8), ""]
    return "\n".join(lines) + "\n"


def run(args: Sequence[str], cards: Sequence[GpuCard], *, show_processes: bool, now: float | None = None) -> str:
    """nvidia-smi's stdout for ``args`` (without the program name); raises SmiError for flags it rejects."""
    opts, attached = _options(args), len(cards)
    if "-i" in opts:
        cards = _select(cards, opts.pop("-i"))
    if not opts:
        return table(cards, show_processes=show_processes, now=now)
    if list(opts) == ["-L"]:
        return "".join(f"GPU {c.index}: {c.name} (UUID: {c.uuid})\n" for c in cards)
    if "-q" in opts and set(opts) <= {"-q", "-d"}:
        shown = {d.strip().upper() for d in opts.get("-d", "").split(",")}
        if shown != {"MEMORY"}:
            raise SmiError("the rehearsal cluster's nvidia-smi answers -q only with -d MEMORY (it has no "
                           f"{', '.join(sorted(shown - {'MEMORY'})) or 'full query'} data)")
        return query_memory(cards, now, attached)
    fmt = set(opts.get("--format", "").split(",")) - {""}
    if "csv" not in fmt or not ({"--query-gpu", "--query-compute-apps"} & set(opts)):
        raise SmiError(f"Invalid combination of input arguments: {' '.join(args)}. "
                       "Please run 'nvidia-smi -h' for help.")
    if "--query-gpu" in opts:
        fields = opts["--query-gpu"].split(",")
        rows: list[dict[str, str | int]] = [
            {"index": c.index, "name": c.name, "uuid": c.uuid, "pci.bus_id": c.bus_id, "driver_version": DRIVER,
             "memory.total": c.total_mib, "memory.used": c.used_mib,
             "memory.free": max(0, c.total_mib - c.used_mib), "utilization.gpu": "0 %"} for c in cards]
    else:
        fields = opts["--query-compute-apps"].split(",")
        rows = [{"pid": p.pid, "process_name": p.name, "used_memory": p.used_mib, "used_gpu_memory": p.used_mib,
                 "gpu_uuid": c.uuid, "gpu_name": c.name} for c in cards for p in c.processes] if show_processes else []
    unknown = [f for f in fields if f not in (rows[0] if rows else _known(opts))]
    if unknown:
        raise SmiError(f'Field "{unknown[0]}" is not a valid field to query.')
    return _csv(rows, fields, fmt)


def _known(opts: dict[str, str]) -> set[str]:
    if "--query-gpu" in opts:
        return {"index", "name", "uuid", "pci.bus_id", "driver_version", "memory.total", "memory.used", "memory.free",
                "utilization.gpu"}
    return {"pid", "process_name", "used_memory", "used_gpu_memory", "gpu_uuid", "gpu_name"}
