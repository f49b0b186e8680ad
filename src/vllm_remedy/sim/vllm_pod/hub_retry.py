"""The "Error retrieving file list" lines a rehearsal pod's vLLM logs before its traceback when the Hub's listing fails.

From 0.7.3 to 0.10.2 vLLM learns whether config.json exists by listing the repository's files (``hub_refusal``), and
``list_repo_files`` calls that listing through ``with_retry`` (transformers_utils/config.py@0.7.3 l.143, @0.10.2
l.323): every exception but ``OfflineModeIsEnabled`` (which the listing turns into an empty list) is logged at ERROR
and tried once more 2 s later, then logged again without the "retrying" tail and raised (two attempts, the delay
doubling after each). So a missing repository, a missing revision, a refused token and a Hub that could not be
reached all print two ERROR lines of ``config.py`` before the traceback; a gated repository (the tree API lists its
files) and an offline pod (an empty listing) print none, nor does 0.11.0, where transformers' read of config.json
fails before any listing (``maybe_override_with_speculators``), though ``with_retry`` is still there.

The message is vLLM's format around ``str(e)``, the text after the exception's name on its traceback line; vLLM's
``NewLineFormatter`` repeats the record's prefix on each line of a message that spans several (it joins them with
"\\r\\n", rendered here as plain lines).
"""

from __future__ import annotations

import re

from vllm_remedy.sim.vllm_pod import hub_refusal

#: the Hub's "no"s the listing raises (``hub_refusal.KINDS``; "gated" and "offline" get past it)
LISTED = ("revision", "unauthorized", "repository", "unreachable")
ATTEMPTS = 2  # with_retry's max_retries
DELAY = 2.0  # its first retry_delay, in seconds
#: release -> transformers_utils/config.py's lines of ``logger.error("%s: %s", ...)`` (the last attempt) and of
#: ``logger.error("%s: %s, retrying %d of %d", ...)``, read from each wheel (config.py@0.7.3 l.100/102, @0.8.3
#: l.101/103, @0.9.0 l.105/107, @0.9.2 l.128/130, @0.10.0 l.131/133, @0.10.1 l.128/130, @0.10.2 l.276/278)
LINES: dict[tuple[int, int, int], tuple[int, int]] = {
    (0, 7, 3): (100, 102), (0, 8, 0): (100, 102), (0, 8, 3): (101, 103), (0, 8, 5): (101, 103),
    (0, 9, 0): (105, 107), (0, 9, 2): (128, 130), (0, 10, 0): (131, 133), (0, 10, 1): (128, 130),
    (0, 10, 2): (276, 278),
}
_NAMED = re.compile(r"^[\w.]+: ")  # "huggingface_hub.errors.HfHubHTTPError: " before str(e)
_TIMEOUT = re.compile(r"read timeout=(\d+(?:\.\d+)?)")


def logs(v: tuple[int, ...], kind: str | None, said: str) -> tuple[tuple[tuple[float, str, str], ...],
                                                                      tuple[str, ...]]:
    """(seconds after the config stage begins, level, message) of each line ``with_retry`` logs before the pod's
    release raises ``said`` (``hub_refusal.words`` for the Hub's ``kind`` of "no"), and each line's source
    (``config.py:N``); empty where the listing is not what failed. Each attempt takes what its error says it waited
    (a read timeout's seconds), none for a refused connection or an answer."""
    if kind not in LISTED or not hub_refusal.LISTING_SINCE <= tuple(v) < hub_refusal.TRANSFORMERS_FIRST_SINCE:
        return (), ()
    last, retried = LINES[max(r for r in LINES if r <= tuple(v))]
    error = _NAMED.sub("", said.split(hub_refusal.CAUSE)[0].rstrip("\n"), count=1)  # the listing's own, not vLLM's
    took = float(m[1]) if (m := _TIMEOUT.search(error)) else 0.0
    at, delay = 0.0, DELAY
    lines: list[tuple[float, str, str]] = []
    for attempt in range(1, ATTEMPTS + 1):
        at += took
        tail = "" if attempt == ATTEMPTS else f", retrying {attempt} of {ATTEMPTS}"
        lines.append((at, "ERROR", f"Error retrieving file list: {error}{tail}"))
        at, delay = at + delay, delay * 2
    return tuple(lines), tuple(f"config.py:{retried if n < ATTEMPTS - 1 else last}" for n in range(ATTEMPTS))
