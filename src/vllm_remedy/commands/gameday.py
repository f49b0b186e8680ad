"""Game days: inject the Sev1 on a cluster, let the deploys restore it, measure and report time-to-restore.

`gameday run SCENARIO|--all` runs on the built-in rehearsal cluster by default (`--cluster local`); a real
context needs `--i-know-this-is-<context>` and prod-looking names are refused unless `--allow-prod`.
The pre-game state is always restored, also on Ctrl-C.

Exit codes:
  0 every game passed
  1 a game failed
  2 bad input
  130 interrupted (Ctrl-C): the game in progress is restored and reported, the rest skipped

Examples:
  vllm-remedy gameday list
  vllm-remedy gameday run bad-rollout
  vllm-remedy gameday run --all --report-dir gameday-reports -o json
  vllm-remedy gameday run gpu-swap --cluster staging --i-know-this-is-staging
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from vllm_remedy.envelope import dumps, envelope, listing
from vllm_remedy.errors import UserError

NAME = "gameday"
ORDER = 90
HELP = "rehearse a Sev1: inject a fault, run the deploys, measure time-to-restore, write a report"
CONFIRM = "--i-know-this-is-"
PROD = re.compile(r"(^|[^a-z])(prod|production|prd|live)([^a-z]|$)", re.IGNORECASE)


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = sub.add_parser("run", help="run one scenario (name or file) or --all",
                         description="Run one scenario (shipped name or YAML file) or --all; write a report per "
                                     "game.")
    run.add_argument("scenario", nargs="?", help="shipped scenario name (see `gameday list`) or a YAML file")
    run.add_argument("--all", action="store_true", help="run every shipped scenario and print a summary table")
    run.add_argument("--cluster", default="local", help="local (built-in rehearsal cluster) or a kube context")
    run.add_argument("--kubeconfig", type=Path, default=None, help="kubeconfig for --cluster CONTEXT")
    run.add_argument("--speed", type=float, default=600.0, help="rehearsal cluster speed (simulated s per s)")
    run.add_argument("--reality", choices=("perturbed", "exact"), default=None,
                     help="local cluster: perturbed (default) starts vLLM pods with the memory model's measured error; "
                     "exact with its estimate (overrides the scenario's world.reality)")
    run.add_argument("--reality-seed", type=int, default=None, metavar="N", help="seed of the perturbed draws")
    run.add_argument("--report-dir", type=Path, default=Path("gameday-reports"), help="where reports go")
    run.add_argument("--allow-prod", action="store_true", help="allow a context whose name looks like production")
    run.add_argument("-o", "--output", choices=("text", "json"), default="text")
    # --i-know-this-is-<context>: the flag's name carries the context, so it is declared for what was typed.
    for arg in sys.argv:
        if arg.startswith(CONFIRM) and len(arg) > len(CONFIRM):
            run.add_argument(arg, action="store_const", const=arg[len(CONFIRM):], dest="confirmed",
                             help=argparse.SUPPRESS)
    run.set_defaults(confirmed=None)
    lst = sub.add_parser("list", help="list the shipped scenarios", description="List the shipped scenarios.")
    lst.add_argument("-o", "--output", choices=("text", "json"), default="text")


def check_target(cluster: str, allow_prod: bool, confirmed: str | None) -> None:
    """A game day breaks the target on purpose: refuse unless the operator named it twice."""
    if cluster == "local":
        return
    if PROD.search(cluster) and not allow_prod:
        raise UserError(f"--cluster {cluster}: looks like production (prod/production/prd/live); a game day breaks "
                        "its target on purpose — add --allow-prod if you really mean it")
    if confirmed != cluster:
        raise UserError(f"--cluster {cluster}: a game day breaks the target on purpose; confirm with "
                        f"--i-know-this-is-{cluster}")


def _list(output: str) -> int:
    from vllm_remedy.gameday.scenario import load_scenario, shipped

    scenarios = [load_scenario(p) for p in shipped()]
    if output == "json":
        print(dumps(listing("ScenarioList", ({"name": s.name, "title": s.title, "file": str(s.source)}
                                             for s in scenarios)), indent=None))
    else:
        for s in scenarios:
            print(f"{s.name:24} {s.title}")
    return 0


def _reality(args: argparse.Namespace, world: Any) -> Any:
    """--reality/--reality-seed over the scenario's world.reality (None: leave it to the scenario and seed)."""
    from vllm_remedy.sim.vllm_pod.reality import Reality

    if args.reality is None and args.reality_seed is None:
        return None
    base = world or Reality()
    return Reality(args.reality or base.mode, base.seed if args.reality_seed is None else args.reality_seed)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every game passed, 1 when one failed, 130 after Ctrl-C: the remaining scenarios are skipped;
    the interrupted one is still restored (its verdict says whether fully) and reported."""
    if args.action == "list":
        return _list(args.output)
    from vllm_remedy.gameday.report import result_json, summary_table, write_report
    from vllm_remedy.gameday.runner import Game
    from vllm_remedy.gameday.scenario import find_scenario, load_scenario, shipped

    if bool(args.all) == bool(args.scenario):
        raise UserError("gameday run: name one SCENARIO or --all")
    if args.speed <= 0:
        raise UserError(f"--speed: must be > 0, got {args.speed}")
    check_target(args.cluster, args.allow_prod, getattr(args, "confirmed", None))
    paths = shipped() if args.all else [find_scenario(args.scenario)]
    scenarios = [load_scenario(p) for p in paths]
    human = args.output == "text"
    results = []
    for sc in scenarios:
        with tempfile.TemporaryDirectory(prefix=f"gameday-{sc.name}-") as tmp:
            def progress(line: str, n: str = sc.name) -> None:
                return (print(f"[{n}] {line}", file=sys.stderr, flush=True))
            game = Game(sc, cluster=args.cluster, kubeconfig=args.kubeconfig, speed=args.speed, workdir=Path(tmp),
                        progress=progress if human else None, reality=_reality(args, sc.reality))
            result = game.run()
        written = write_report(result, args.report_dir)
        results.append((result, written))
        if human:
            print(f"{sc.name}: {result.verdict()}")
            for check in result.checks:
                print(f"  {'ok ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
            print(f"  report: {written['html']}")
        if result.interrupted:
            break
    if args.output == "json":
        body = [envelope("GameDayResult", result_json(r, p)) for r, p in results]
        print(dumps(listing("GameDayResultList", body) if args.all else body[0], indent=None))
    elif args.all:
        print()
        print(summary_table(results), end="")
    if any(r.interrupted for r, _ in results):
        return 130
    return 0 if all(r.passed for r, _ in results) else 1
