"""The max-model-len rule when an argument taken from a variable may carry the flag: unknown, never a violation.

`sh -c 'ARGS="--max-model-len 131072"; exec vllm serve M $ARGS'` or an unreadable `$(EXTRA)` in args
(``ServerCommand.hidden``) can set --max-model-len where the parse never sees it; the flags check already says it
cannot know, so asserting "--max-model-len is not set" beside it would be a claim the tool cannot make.
"""

from __future__ import annotations

from vllm_remedy.drift.checks import DRIFT, UNKNOWN, Check, check_max_model_len
from vllm_remedy.policy import Policy
from vllm_remedy.vllm.cmdline import ServerCommand


def max_model_len(policy: Policy, server: ServerCommand) -> Check:
    """``check_max_model_len``, unknown instead of a drift when a hidden argument may set the flag."""
    found = check_max_model_len(policy, server)
    if found.status != DRIFT or not server.hidden:
        return found
    words = ", ".join(server.hidden)
    return Check("max-model-len", UNKNOWN, f"--max-model-len is not written out, but {words} (an argument taken from "
                 "a variable) may set it: whether it is set cannot be told")
