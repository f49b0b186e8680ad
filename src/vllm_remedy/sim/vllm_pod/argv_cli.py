"""Where ``vllm serve``'s refusals are printed: the top-level ``vllm`` parser refuses the leftovers, serve's own does
the rest.

argparse's sub-parser action (CPython 3.12 ``_SubParsersAction.__call__``) runs ``vllm serve``'s parser with
``parse_known_args`` and hands the words it leaves over back to the top-level parser, whose ``parse_args`` refuses them
under its own prog and usage: ``usage: vllm [-h] [-v] {chat,complete,serve,...} ...`` then ``vllm: error:
unrecognized arguments: --bogus-flag 1`` (as reported against vLLM 0.6.0, vllm-project/vllm#8273, and later releases).
What serve's parser raises itself (an invalid value, an ambiguous prefix, an ignored explicit argument, a missing
``model_tag``) stays ``vllm serve: error:`` after serve's usage. ``python -m vllm.entrypoints.openai.api_server`` has
no sub-parser: its one parser refuses everything as ``api_server.py``.

The top-level parser is ``FlexibleArgumentParser(description="vLLM CLI")`` (vllm/scripts.py@0.5.5-0.7.2,
entrypoints/cli/main.py@0.7.3-0.34.0, prog from ``sys.argv[0]``: ``vllm``); its options and sub-commands per release
are the rehearsal table's ``cli`` row (scripts/sim_vllm_cli.py). argparse wraps the usage at the width
``shutil.get_terminal_size`` gives less 2: a container has no terminal and no ``COLUMNS``, so 80 - 2; the line is
formatted here by argparse's own formatter at that width, not by hand. From 0.29.0 FlexibleArgumentParser's ``error``
(utils/argparse_utils.py@0.29.0-0.34.0) adds a hint when ``vllm serve``'s leftovers hold ``--task``, an option those
releases no longer have.
"""

from __future__ import annotations

import argparse
import functools
import re

from . import argv_options

Version = tuple[int, int, int]
#: shutil.get_terminal_size's fallback (80 columns: no terminal, no COLUMNS) less argparse's 2 (HelpFormatter)
WIDTH = 80 - 2
TASK_HINT_SINCE: Version = (0, 29, 0)
TASK_HINT = ("Hint: --task is not a vllm serve option. For embedding, reranking, or reward models, use --runner "
             "pooling. To adapt a generative model for pooling, also use --convert embed, --convert classify, or "
             "--convert reward.")
UNRECOGNIZED = "unrecognized arguments: "


@functools.cache
def top_usage(version: Version | None) -> tuple[str, ...]:
    """The top-level ``vllm`` parser's usage lines in ``version`` (None: the newest read), wrapped by argparse."""
    options, commands = argv_options.cli(version)
    parser = argparse.ArgumentParser(prog="vllm", add_help=False,
                                     formatter_class=lambda prog: argparse.HelpFormatter(prog, width=WIDTH))
    for option in options:
        parser.add_argument(option, action="store_true")  # only how the usage shows it matters: ``[-v]``
    sub = parser.add_subparsers()
    for command in commands:
        sub.add_parser(command)
    return tuple(parser.format_usage().rstrip("\n").split("\n"))


def leftovers_refused(message: str, version: Version | None) -> list[str]:
    """What ``vllm serve`` writes to stderr when its leftovers are refused (``message``: ``unrecognized arguments:
    ...``): the top-level usage, ``vllm: error: ...``, and from 0.29.0 the ``--task`` hint when a leftover word is
    ``--task`` or ``--task=...`` (``re.search(r"(^|\\s)--task(=|\\s|$)", message)`` on the message; the raw argv holds
    that word too, as nothing rewrites it)."""
    lines = [*top_usage(version), f"vllm: error: {message}"]
    if (version is None or version >= TASK_HINT_SINCE) and re.search(r"(^|\s)--task(=|\s|$)", message):
        lines += ["", TASK_HINT]
    return lines
