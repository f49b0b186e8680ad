"""One module per ``vllm-remedy`` subcommand.

Each module defines ``NAME``, ``HELP``, ``configure(parser)`` and ``run(args) -> int``, and may set ``ORDER``
(its place in `vllm-remedy --help`, runbook order; unset sorts last); ``cli.py`` discovers them. The module
docstring is the command's help: its first paragraph above the options, the rest (examples indented, one per
line) below them. ``-o json`` documents go through ``vllm_remedy.envelope`` (``apiVersion`` + ``kind``).
They hold argument parsing and printing only — the logic lives in the layers below.
"""
