"""A rehearsal vLLM container run with ``--headless``: an engine node of a multi-node data-parallel group, no API
server (hostile review 16, G6: the rehearsal pod used to start one and log "Application startup complete").

vLLM from 0.9.0 (``entrypoints/cli/serve.py``: ``if args.headless or args.api_server_count < 1: run_headless``)
builds the engine config, logs "Launching %d data parallel engine(s) in headless mode, with head node address %s."
and starts its engine processes, which first wait on the handshake with the head node's front end. The rehearsal has
no head node, so the pod logs that line and waits: it runs on, never serves, ``/health`` is never answered (a
readiness probe never passes; a pod without one is Ready as kubelet makes it). The engine's own lines (platform,
config) are not rehearsed.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime, timedelta

from vllm_remedy.sim.runtime import LogLine
from vllm_remedy.sim.vllm_pod import timeline
from vllm_remedy.sim.vllm_pod.launch import Launch
from vllm_remedy.vllm.cmdline import ServerCommand
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.versions import parse_version

#: The line of ``logger.info(`` of the headless line in ``entrypoints/cli/serve.py``, per release read (a release
#: between two read takes the older one's).
_LINE = ((0, 9, 0, 120), (0, 9, 2, 145), (0, 10, 0, 113), (0, 10, 1, 111), (0, 11, 0, 117), (0, 12, 0, 135),
         (0, 14, 0, 139), (0, 15, 0, 190), (0, 17, 0, 191), (0, 18, 0, 204), (0, 19, 0, 208), (0, 20, 0, 201),
         (0, 22, 0, 227), (0, 27, 0, 231), (0, 29, 0, 232), (0, 30, 0, 236), (0, 32, 0, 239))
#: ``ParallelConfig`` defaults: ``data_parallel_master_ip``, ``data_parallel_rpc_port`` (config/parallel.py).
MASTER_IP, RPC_PORT = "127.0.0.1", "29550"


def applies(cmd: ServerCommand, version: str) -> bool:
    """Whether this release runs ``cmd`` headless (older releases refuse ``--headless`` at argparse already)."""
    parsed = parse_version(version)
    flags = cmd.flags
    asked = flags.get("headless", "false").lower() not in ("false", "0") or flags.get("api-server-count") == "0"
    return asked and parsed is not None and parsed >= (0, 9, 0)


def _address(cmd: ServerCommand) -> str:
    """``get_tcp_uri(host, port)`` of the head node, as run_headless computes it."""
    host = cmd.flags.get("data-parallel-address") or MASTER_IP
    port = cmd.flags.get("data-parallel-rpc-port") or RPC_PORT
    try:
        v6 = ipaddress.ip_address(host).version == 6
    except ValueError:
        v6 = False
    return f"tcp://[{host}]:{port}" if v6 else f"tcp://{host}:{port}"


def lines(cmd: ServerCommand, launch: Launch, started: datetime) -> tuple[LogLine, ...]:
    """The headless pod's log: the release's headless line, in its format, and nothing after. The version banner
    and "non-default args" are ``setup_server``'s (openai/api_server.py), which headless never runs, and no
    "(APIServer pid=N)" prefix either (``decorate_logs("APIServer")`` is run_server's)."""
    rendered = timeline.render(launch, Failure.NONE, started).splitlines()
    like = next((line for line in rendered if " [" in line or "] " in line), "")
    like = like[len(timeline._prefix(like)):]  # the record format, no process prefix
    parsed = parse_version(launch.version) or (0, 9, 0)
    at = next((n for *rel, n in reversed(_LINE) if tuple(rel) <= tuple(parsed[:3])), _LINE[0][3])
    flags = cmd.flags
    count = flags.get("data-parallel-size-local") or flags.get("data-parallel-size") or "1"
    message = (f"Launching {count} data parallel engine(s) in headless mode, with head node address "
               f"{_address(cmd)}.")
    said = timeline._logged(like, "INFO", f"serve.py:{at}", message)
    boot = timeline.BOOT_SECONDS
    return tuple(LogLine(boot, line) for line in timeline.stamp_all(said, started + timedelta(seconds=boot)))
