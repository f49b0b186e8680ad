"""Answer Alertmanager's pages by running the runbook's deploy for the workload that paged, gated by policy.

An HTTP receiver for Alertmanager's webhook (payload version 4) at POST /alertmanager. Each firing alert that
`vllm-remedy alerts` renders is mapped to exactly one inventory host (labels namespace + deployment, or pod
resolved to its Deployment; a cluster label picks among clusters) and answered with the real
`pyinfra INVENTORY deploys/<step>.py --limit HOST`: restore for crash loops and OOM restarts, load_guard for
KV cache pressure under load. The host's policy decides (respond.mode: off | dry-run | auto, respond.cooldown);
one action at a time per host; a repeat of the same alert within the cool-down, a resolved alert, or one naming
no inventory host does nothing (logged). Every action leaves Kubernetes Events on the Deployment (reporting
controller vllm-remedy.io/responder) and, with --notes, an incident note (Markdown + JSON).

Bearer token from --token-file or $VLLM_REMEDY_RESPOND_TOKEN (required). GET /healthz, GET /metrics (the
responder's own Prometheus metrics). Answers within a second: deploys run after the reply; when 256 alerts are
already waiting, 503 (Alertmanager retries). The cool-down also reads the Deployment's last-action-at stamp, so
a restart or a second replica does not act again inside it.

Exit codes:
  0 stopped (SIGTERM / Ctrl-C)
  2 bad input (no token, an inventory that does not load, a listen address that cannot be bound)

Examples:
  VLLM_REMEDY_RESPOND_TOKEN=s3cret vllm-remedy respond -i inventories/local.py --listen 127.0.0.1:9096
  vllm-remedy respond -i /etc/vllm-remedy/inventory.py --token-file /var/run/secrets/respond/token \\
      --notes /var/lib/vllm-remedy/incidents --chat-webhook https://hooks.slack.com/services/...
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

from vllm_remedy.errors import UserError
from vllm_remedy.respond.responder import Responder, Settings
from vllm_remedy.respond.server import PATH, Server

NAME = "respond"
ORDER = 75
HELP = "answer Alertmanager's webhook with the runbook's deploy for the paging workload (policy-gated)"
TOKEN_ENV = "VLLM_REMEDY_RESPOND_TOKEN"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--inventory", required=True, metavar="INVENTORY", help="pyinfra inventory file")
    parser.add_argument("--listen", default="0.0.0.0:9096", metavar="HOST:PORT",
                        help="address to serve on (default 0.0.0.0:9096; port 0 picks a free one)")
    parser.add_argument("--token-file", type=Path, metavar="PATH",
                        help=f"file holding the bearer token Alertmanager sends (else ${TOKEN_ENV})")
    parser.add_argument("--notes", type=Path, metavar="DIR", help="write an incident note (.md + .json) per action")
    parser.add_argument("--chat-webhook", metavar="URL", help='POST each incident\'s summary as {"text": ...}')


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UserError(f"--listen {value}: expected HOST:PORT, e.g. 127.0.0.1:9096")
    return host.strip("[]") or "0.0.0.0", int(port)


def _token(path: Path | None) -> str:
    if path is not None:
        try:
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"--token-file {path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
        if not token:
            raise UserError(f"--token-file {path}: empty")
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise UserError(f"no bearer token: pass --token-file or set {TOKEN_ENV}")
    return token


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    token = _token(args.token_file)
    address = _listen(args.listen)
    if args.chat_webhook and not args.chat_webhook.startswith(("http://", "https://")):
        raise UserError(f"--chat-webhook {args.chat_webhook}: expected an http(s):// URL")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    responder = Responder(Settings(args.inventory, args.notes, args.chat_webhook))
    hosts = responder.hosts()  # bad inventory: one line, exit 2, before serving; then cached
    try:
        server = Server(address, responder, token)
    except OSError as exc:
        raise UserError(f"--listen {args.listen}: cannot bind ({exc.strerror or exc})") from None
    signal.signal(signal.SIGTERM, _stop)  # kubelet's stop: finish as on Ctrl-C
    print(f"vllm-remedy respond: serving POST {server.url}{PATH} for {len(hosts)} inventory host(s)",
          file=sys.stderr, flush=True)
    responder.start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        responder.stop()
    return 0
