"""One module per ``vllm-remedy`` subcommand.

Each module defines ``NAME``, ``HELP``, ``configure(parser)`` and ``run(args) -> int``; ``cli.py``
lists them. They hold argument parsing and printing only — the logic lives in the layers below.
"""
