"""Child process for ``vllm-remedy drift`` / ``expire``: gevent first, then pyinfra; JSON on stdout.

Why a child: pyinfra runs hosts concurrently only when gevent has patched the standard library before
urllib3 (the kubernetes client) is imported, and the ``vllm-remedy`` CLI imports every command module
— some of which import the kubernetes client — before a command runs.

    python -m vllm_remedy.drift plan -i inventories/prod.py [--limit PATTERN ...]
    python -m vllm_remedy.drift expire -i inventories/prod.py

Exit 0 with the results document; exit 2 with ``{"error": "..."}`` when the run could not start.
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402  (after patch_all, by design)
import json  # noqa: E402
import sys  # noqa: E402


def main() -> int:
    """Parse ``plan|expire -i INVENTORY``, run the runner; a UserError becomes ``{"error": ...}`` and exit 2
    so the parent CLI can print it as its one error line."""
    parser = argparse.ArgumentParser(prog="python -m vllm_remedy.drift")
    parser.add_argument("mode", choices=("plan", "expire"))
    parser.add_argument("-i", "--inventory", required=True)
    parser.add_argument("--limit", action="append", default=[])
    args = parser.parse_args()
    from vllm_remedy.drift import runner
    from vllm_remedy.errors import UserError

    try:
        result = (runner.plan if args.mode == "plan" else runner.expire)(args.inventory, args.limit)
    except UserError as exc:
        json.dump({"error": " ".join(str(exc).split())}, sys.stdout)
        return 2
    sys.stdout.write(json.dumps(result, default=str))  # one write: json.dump writes each of ~350 tokens a host
    return 0


if __name__ == "__main__":
    sys.exit(main())
