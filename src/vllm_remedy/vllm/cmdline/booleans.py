"""Which boolean flags take a value in which release, and how argparse names them when it refuses one.

Read in the PyPI wheels (engine/arg_utils.py and entrypoints/openai/cli_args.py at 0.6.5, 0.7.3, 0.8.0, 0.8.3, 0.8.5,
0.9.2, 0.10.2, 0.11.0, 0.34.0; utils.py / utils/argparse_utils.py for ``FlexibleArgumentParser``, which rewrites only
``_`` to ``-`` in ``--x_y=v`` and passes the value on untouched):

* ``StoreBoolean`` (utils.py, ``nargs='?'``, ``const="True"``; true/false in any case, as the next word or after ``=``)
  is the legacy form of ``--enable-chunked-prefill`` and ``--multi-step-stream-outputs`` (0.6.5 to 0.8.3 read, gone
  at 0.8.5: dataclass fields there) and ``--disable-logprobs-during-spec-decoding`` (0.6.5 to 0.8.0, gone at 0.8.3);
* every other boolean is ``store_true`` or ``argparse.BooleanOptionalAction`` (``nargs=0``): ``--x=true`` is refused
  by argparse (CPython 3.12 ``consume_optional``: ``argument --x: ignored explicit argument 'true'``, the action's
  option strings joined by ``/``, so ``--x/--no-x`` for a BooleanOptionalAction), and ``--x true`` leaves ``true``
  to the positionals (``unrecognized arguments: true`` once ``model_tag`` is taken);
* ``--no-x`` exists only where the flag is a BooleanOptionalAction: ``--enforce-eager`` and ``--trust-remote-code``
  were ``store_true`` to 0.8.5 and dataclass fields (``get_kwargs``: BooleanOptionalAction) from 0.9.0;
  ``--disable-log-stats`` is ``store_true`` in every release read. Which it is in a release is read from that
  release's parser (``release_flags.shown``, 43 releases); ``_STORE_TRUE_READ`` is the fallback outside them.
"""

from __future__ import annotations

from vllm_remedy.vllm.cmdline import release_flags, table

Version = tuple[int, int, int]

#: The first release read without StoreBoolean for each legacy flag (the releases between were not read).
STORE_BOOLEAN_UNTIL: dict[str, Version] = {
    "enable-chunked-prefill": (0, 8, 5), "multi-step-stream-outputs": (0, 8, 5),
    "disable-logprobs-during-spec-decoding": (0, 8, 3),
}
#: ``action='store_true'`` per release read (engine args and the OpenAI frontend's), each applying from that release
#: until the next one read; a boolean not listed is a BooleanOptionalAction there (``get_kwargs`` or explicit).
_STORE_TRUE_READ: tuple[tuple[Version, frozenset[str]], ...] = (
    ((0, 0, 0), frozenset({  # 0.6.5
        "skip-tokenizer-init", "trust-remote-code", "worker-use-ray", "ray-workers-use-nsight",
        "disable-sliding-window", "use-v2-block-manager", "disable-log-stats", "enforce-eager",
        "disable-custom-all-reduce", "mm-cache-preprocessor", "enable-lora", "enable-lora-bias",
        "fully-sharded-loras", "enable-prompt-adapter", "speculative-disable-mqa-scorer", "disable-async-output-proc",
        "disable-log-requests", "allow-credentials", "return-tokens-as-token-ids", "disable-frontend-multiprocessing",
        "enable-auto-tool-choice", "disable-fastapi-docs", "enable-prompt-tokens-details"})),
    ((0, 8, 5), frozenset({
        "skip-tokenizer-init", "trust-remote-code", "disable-sliding-window", "use-v2-block-manager",
        "disable-log-stats", "enforce-eager", "disable-mm-preprocessor-cache", "disable-async-output-proc",
        "enable-sleep-mode", "enable-reasoning", "disable-cascade-attn", "disable-log-requests",
        "disable-uvicorn-access-log", "allow-credentials", "enable-ssl-refresh", "return-tokens-as-token-ids",
        "disable-frontend-multiprocessing", "enable-request-id-headers", "enable-auto-tool-choice",
        "disable-fastapi-docs", "enable-prompt-tokens-details", "enable-server-load-tracking"})),
    ((0, 9, 2), frozenset({
        "disable-async-output-proc", "disable-log-stats", "disable-log-requests", "disable-uvicorn-access-log",
        "allow-credentials", "enable-ssl-refresh", "return-tokens-as-token-ids", "disable-frontend-multiprocessing",
        "enable-request-id-headers", "enable-auto-tool-choice", "expand-tools-even-if-tool-choice-none",
        "disable-fastapi-docs", "enable-prompt-tokens-details", "enable-force-include-usage",
        "enable-server-load-tracking"})),
    ((0, 10, 2), frozenset({
        "disable-async-output-proc", "enable-multimodal-encoder-data-parallel", "disable-mm-preprocessor-cache",
        "disable-log-stats", "headless"})),
    ((0, 11, 0), frozenset({
        "enable-multimodal-encoder-data-parallel", "disable-mm-preprocessor-cache", "disable-log-stats", "headless"})),
    ((0, 34, 0), frozenset({"data-parallel-multi-port-external-lb", "disable-log-stats", "aggregate-engine-logging"})),
)


def store_boolean(name: str, v: Version) -> bool:
    """Whether release ``v`` reads ``--name`` with StoreBoolean (``nargs='?'``: the next word that is no option is its
    value, whatever the word): the release's own parser where it was read (``release_flags.nargs``: 0.6.2's
    ``--multi-step-stream-outputs`` is still ``store_true``), ``STORE_BOOLEAN_UNTIL`` elsewhere."""
    if name not in table.LEGACY_OPTIONAL_BOOLEAN:
        return False
    code = release_flags.nargs(f"--{name}", v)
    if code is not None:
        return code == "?"
    until = STORE_BOOLEAN_UNTIL.get(name)
    return until is not None and v < until


def option_strings(name: str, v: Version) -> str:
    """argparse's name for the flag in its refusal: ``--x`` for store_true, ``--x/--no-x`` for BooleanOptionalAction,
    ``--enable-x/--disable-x`` for vLLM's EnableDisableAction (0.33.0+). The release's own parser decides where one
    was read (``release_flags.shown``: 0.9.0 already has ``--no-enforce-eager``, 0.5.5-0.6.4 ``--enable-prefix-caching``
    is store_true); for a release newer than the newest read, that newest one's (as ``flags.in_release`` reads
    0.35.0's ``--disable-lora`` as 0.34.0's inverse of ``--enable-lora``, argparse names that action
    ``--enable-lora/--disable-lora``, utils/argparse_utils.py@0.34.0 ``visible_option_strings``); the hand-read lists
    below only outside the releases read (the newest table's store_true flags are store_true in every release read
    that has them)."""
    newest = release_flags.releases()[-1]
    got = release_flags.shown(f"--{name}", min(v, newest))
    if got is not None:
        return got
    read = next(s for since, s in reversed(_STORE_TRUE_READ) if v >= since)
    return f"--{name}" if name in read or name in table.STORE_TRUE else f"--{name}/--no-{name}"
