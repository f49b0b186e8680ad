"""Run the rehearsal cluster: a kubectl-compatible Kubernetes API on 127.0.0.1 with simulated vLLM pods.

`sim up` serves one or more simulated clusters from one port, writes a kubeconfig with one context per
cluster and prints its path; state is kept in --state so `sim down` and a later `sim up` lose nothing.

Examples:
  vllm-remedy sim up --background
  export KUBECONFIG=~/.local/state/vllm-remedy/sim/kubeconfig
  vllm-remedy sim up --background --cluster prod-eu --cluster prod-us --speed 600 -o json
  vllm-remedy sim up --background --reality exact   # pods start exactly as the memory model estimates
  vllm-remedy sim down
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from vllm_remedy.envelope import dumps, envelope
from vllm_remedy.errors import UserError
from vllm_remedy.yamlfile import read_yaml

NAME = "sim"
ORDER = 100
HELP = "run the rehearsal cluster (kubectl-compatible API on 127.0.0.1)"
READY_FILE = "sim.json"
REALITIES = ("perturbed", "exact")


def default_state() -> Path:
    """Where ``sim up``/``sim down`` keep cluster state without --state: the XDG state folder, so a later up resumes."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "vllm-remedy" / "sim"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="start the server (foreground, or --background)",
                        description="Start the rehearsal cluster's API server (foreground, or --background) and "
                                    "write its kubeconfig.")
    up.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = a free one)")
    up.add_argument("--state", type=Path, default=None,
                    help="state folder (default: $XDG_STATE_HOME/vllm-remedy/sim, else ~/.local/state/...)")
    up.add_argument("--speed", type=float, default=60.0, help="simulated seconds per real second")
    up.add_argument("--seed", default="runbook", help="seed YAML file or packaged seed name (default: runbook); "
                    "used only for clusters with no saved state")
    up.add_argument("--reality", choices=REALITIES, default=None,
                    help="perturbed (default): vLLM pods get the memory model's estimate moved by its error measured "
                    "on real logs; exact: they get the estimate itself (overrides the seed's `reality` key)")
    up.add_argument("--reality-seed", type=int, default=None, metavar="N",
                    help="seed of the perturbed reality's draws (overrides the seed's `reality-seed`; default 0)")
    up.add_argument("--cluster", action="append", dest="clusters", metavar="NAME",
                    help="simulated cluster name (repeat for a fleet; default: rehearsal)")
    up.add_argument("--kubeconfig", type=Path, default=None, help="where to write the kubeconfig")
    up.add_argument("--auth", type=Path, default=None, help="YAML: {tokens: {TOKEN: {user, rules}}}")
    up.add_argument("--faults", type=Path, default=None, help="YAML: {CLUSTER|'*': [fault rules]}")
    up.add_argument("--tls", action="store_true", help="serve HTTPS (always on with --auth: kubectl sends "
                    "tokens only over TLS)")
    up.add_argument("--background", action="store_true", help="detach; pid file in the state folder")
    up.add_argument("-o", "--output", choices=("text", "json"), default="text")
    down = sub.add_parser("down", help="stop a background server (state is saved)",
                          description="Stop a background rehearsal cluster; its state stays for the next `sim up`.")
    down.add_argument("--state", type=Path, default=None, help="state folder given to `sim up` (same default)")
    down.add_argument("-o", "--output", choices=("text", "json"), default="text")


def _yaml_file(path: Path | None, what: str) -> Any:
    return None if path is None else read_yaml(path, what)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _running(state: Path) -> dict[str, Any] | None:
    try:
        info = json.loads((state / READY_FILE).read_text())
    except (OSError, ValueError):
        return None
    return info if _alive(int(info.get("pid", 0))) else None


def _report(info: dict[str, Any], output: str) -> None:
    if output == "json":
        print(dumps(envelope("RehearsalCluster", info), indent=None))
        return
    print(f"rehearsal cluster serving {info['url']} (clusters: {', '.join(info['clusters'])}; pid {info['pid']})")
    print(f"kubeconfig: {info['kubeconfig']}")
    print(f"kube-state-metrics (for Prometheus): {info['url']}/kube-state-metrics/<cluster>/metrics")
    print(f"state: {info['state']}")
    realities = sorted(set((info.get("reality") or {}).values()))
    if realities:
        print(f"reality: {', '.join(realities)}")
    if info.get("tools_env"):  # the models its seed ships, as the tools run against it must see them
        exports = " ".join(f"{k}={v}" for k, v in info["tools_env"].items())
        print(f"models shipped by the seed, for the deploys, check and drift: export {exports}")


def _foreground_argv(args: argparse.Namespace, state: Path) -> list[str]:
    """The same `sim up`, minus --background, rebuilt from the parsed options (not from sys.argv)."""
    argv = ["sim", "up", "--port", str(args.port), "--state", str(state), "--speed", str(args.speed),
            "--seed", str(args.seed)]
    for name in args.clusters or []:
        argv += ["--cluster", name]
    if args.reality is not None:
        argv += ["--reality", args.reality]
    if args.reality_seed is not None:
        argv += ["--reality-seed", str(args.reality_seed)]
    for flag, value in (("--kubeconfig", args.kubeconfig), ("--auth", args.auth), ("--faults", args.faults)):
        if value is not None:
            argv += [flag, str(Path(value).resolve())]
    return argv + (["--tls"] if args.tls else [])


def _background(args: argparse.Namespace, state: Path) -> int:
    argv = _foreground_argv(args, state)
    state.mkdir(parents=True, exist_ok=True)
    (state / READY_FILE).unlink(missing_ok=True)
    with open(state / "sim.log", "ab") as logfile:
        proc = subprocess.Popen([sys.executable, "-m", "vllm_remedy", *argv], stdin=subprocess.DEVNULL,
                                stdout=logfile, stderr=logfile, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        info = _running(state)
        if info and info.get("pid") == proc.pid:
            _report(info, args.output)
            return 0
        if proc.poll() is not None:
            tail = (state / "sim.log").read_text(errors="replace").strip().splitlines()[-1:]
            raise UserError(f"sim up: the server exited ({proc.returncode}): {' '.join(tail)}")
        time.sleep(0.1)
    raise UserError(f"sim up: the server did not become ready in 120 s; see {state / 'sim.log'}")


def _up(args: argparse.Namespace) -> int:
    from vllm_remedy.sim.api import auth as auth_mod
    from vllm_remedy.sim.api.faults import parse as parse_faults
    from vllm_remedy.sim.clock import Clock
    from vllm_remedy.sim.cluster import Cluster
    from vllm_remedy.sim.server import SimServer, load_state
    from vllm_remedy.sim.store import ApiError
    from vllm_remedy.sim.tls import ensure_cert

    state: Path = (args.state or default_state()).resolve()
    if args.speed <= 0:
        raise UserError(f"--speed: must be > 0, got {args.speed}")
    running = _running(state)
    if running:
        raise UserError(f"{state}: a rehearsal cluster is already running (pid {running['pid']}); "
                        f"run `vllm-remedy sim down --state {state}`")
    if args.background:
        return _background(args, state)
    from vllm_remedy.sim.seed import cluster_seeds, enable_admission, load_seed, ship_model

    seed, label = load_seed(args.seed)
    per_cluster = cluster_seeds(seed)
    if "clusters" in seed and not args.clusters:
        names = list(per_cluster)
    else:
        names = args.clusters or ["rehearsal"]
        per_cluster = {name: per_cluster.get(name, per_cluster.get("default", {})) for name in names}
    for name in names:
        if not name.replace("-", "").isalnum() or name != name.lower():
            raise UserError(f"--cluster {name!r}: expected a lowercase DNS label (letters, digits, '-')")
        if name not in per_cluster:
            raise UserError(f"--cluster {name}: the seed defines clusters {', '.join(per_cluster)}")
    authz = auth_mod.load(_yaml_file(args.auth, "auth config"), str(args.auth))
    fault_config = _yaml_file(args.faults, "fault config") or {}
    if not isinstance(fault_config, dict):
        raise UserError(f"{args.faults}: expected a mapping of cluster name (or '*') to a list of fault rules")
    clusters = []
    for name in names:
        reality = _reality(args, {**{k: seed[k] for k in ("reality", "reality-seed") if k in seed},
                                  **per_cluster[name]}, f"{label} (cluster {name})")
        saved = state / f"{name}.json"
        if saved.exists():
            data = load_state(saved)
            cluster = Cluster(name, clock=Clock(args.speed, start=data.get("clock")), reality=reality)
            cluster.restore(data.get("snapshot", {}))
            enable_admission(cluster.store, {**seed, **per_cluster[name]}, label)
            for i, entry in enumerate(per_cluster[name].get("models") or []):  # not in the state: the pods' own again
                ship_model(entry, f"{label}: models[{i}]")
            cluster.start()
        else:
            cluster = Cluster(name, clock=Clock(args.speed), reality=reality)
            cluster.start()
            cluster.apply_seed(per_cluster[name], wait=True, timeout=120, reality=reality)
        clusters.append(cluster)
    faults = {}
    for name in names:
        rules = fault_config.get(name, fault_config.get("*"))
        if rules is not None:
            try:
                faults[name] = parse_faults(rules)
            except ApiError as exc:
                raise UserError(f"{args.faults}: {exc.message}") from exc
    tls = ensure_cert(state) if (args.tls or authz.enabled) else None
    try:
        server = SimServer(clusters, port=args.port, state_dir=state, auth=authz, faults=faults, tls=tls)
    except OSError as exc:
        raise UserError(f"--port {args.port}: cannot listen on 127.0.0.1: {exc.strerror}") from exc
    users = {ident.user: token for token, ident in authz.tokens.items()}
    default_user = "admin" if "admin" in users else None
    path = server.write_kubeconfig(args.kubeconfig or state / "kubeconfig", users, default_user)
    server.start()
    info = {"pid": os.getpid(), "url": server.url, "kubeconfig": str(path.resolve()), "clusters": names,
            "state": str(state), "reality": {c.name: _describe(c.reality) for c in clusters}}
    from vllm_remedy.sim.shipped_models import tools_env  # the seed's models in a cache the tools read offline

    shipped = tools_env({"models": [m for n in names for m in per_cluster[n].get("models") or []]}, state)
    if shipped:
        info["tools_env"] = shipped
    (state / READY_FILE).write_text(json.dumps(info))
    _report(info, args.output)
    sys.stdout.flush()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(1.0):
        pass
    for cluster in clusters:
        cluster.stop()
    server.stop()
    (state / READY_FILE).unlink(missing_ok=True)
    return 0


def _reality(args: argparse.Namespace, seed: dict[str, Any], label: str) -> Any:
    """--reality/--reality-seed over the seed's keys over the default (perturbed, seed 0)."""
    from vllm_remedy.sim.vllm_pod.reality import parse_reality

    base = parse_reality(seed.get("reality"), seed.get("reality-seed"), label)
    return parse_reality(args.reality or base.mode,
                         args.reality_seed if args.reality_seed is not None else base.seed, "--reality")


def _describe(reality: Any) -> str:
    return "exact" if reality is None or reality.exact else f"perturbed (seed {reality.seed})"


def _down(args: argparse.Namespace) -> int:
    state: Path = (args.state or default_state()).resolve()
    info = _running(state)
    if info is None:
        raise UserError(f"{state}: no rehearsal cluster is running")
    pid = int(info["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        raise UserError(f"pid {pid} did not stop within 30 s")
    result = envelope("RehearsalClusterStopped", {"stopped": pid, "state": str(state)})
    print(dumps(result, indent=None) if args.output == "json" else f"stopped rehearsal cluster (pid {pid}); "
          f"state kept in {state}")
    return 0


def run(args: argparse.Namespace) -> int:
    return _up(args) if args.action == "up" else _down(args)
