"""vLLM's argument parser on a rehearsal pod's argv: the values argparse refuses before anything else runs.

Kept apart from the tools' reading of the same values (``vllm.cmdline.values``), as ``env`` is from ``pod_env``: the
rehearsal is what the tools are tested against, so it must not share their mistakes. Read from vLLM's source:
``human_readable_int`` (engine/arg_utils.py@0.8.4-0.19, utils/argparse_utils.py@0.20.0-0.34.0) strips the text, takes
a number with one suffix, ``k/m/g`` decimal (``int(float(n) * 1000**x)``) and ``K/M/G`` binary (a whole number only:
``1.5K`` raises ``argparse.ArgumentTypeError("Decimals are not allowed with binary suffixes like K. Did you mean to
use 1.5k instead?")``); ``t/T`` joined the tables in 0.13.0 (before, the pattern matched and ``int()`` refused);
anything else goes to ``int()``. ``human_readable_int_or_auto`` (--max-model-len from 0.14.0) takes ``-1`` and
``auto`` first. The flags that use them grew by release; every other integer flag is ``type=int`` and a float flag
``type=float``. A flag that takes a value and gets none, and words left over (a second positional), are argparse's
own refusals. argparse (CPython 3.12, ``_get_value``) turns a ValueError into ``invalid <type.__name__> value:
'<text>'`` and an ArgumentTypeError into its own message, both as ``argument --flag: ...``; ``parser.error`` prints
the usage line and ``<prog>: error: <message>`` on stderr and exits 2. ``vllm serve``'s usage is
``vllm serve [model_tag] [options]`` (entrypoints/cli/serve.py, every release read 0.8.5-0.34.0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# the rehearsal's own tables (no tools' module: see above)
from . import argv_added, argv_choices, argv_cli, argv_compilation, argv_options, argv_order
from .argv_added import placed  # noqa: F401  (launch.py's argv-ordered items for ``first_error``'s ``spelled``)
from .argv_options import names as _names

Version = tuple[int, int, int]

#: The first release whose parser reads each flag with ``human_readable_int`` (engine/arg_utils.py at each release).
HUMAN_SINCE: dict[str, Version] = {
    "max-model-len": (0, 8, 4), "max-num-batched-tokens": (0, 9, 1), "kv-cache-memory-bytes": (0, 10, 2),
}
OR_AUTO_SINCE: Version = (0, 14, 0)  # --max-model-len: human_readable_int_or_auto
TERA_SINCE: Version = (0, 13, 0)
#: Flags every release modelled here parses with ``type=int`` or ``type=float`` (the ones the rehearsal reads).
INT_FLAGS = frozenset({"max-model-len", "max-num-batched-tokens", "max-num-seqs", "tensor-parallel-size",
                       "pipeline-parallel-size", "num-gpu-blocks-override", "block-size"})
FLOAT_FLAGS = frozenset({"gpu-memory-utilization", "swap-space", "cpu-offload-gb"})
#: Flags whose field turned Optional (``optional_type(parse_type(t))``: ``Value abc cannot be converted to <class
#: 'float'>.``, ``None`` taken), from the first release read with it (config/cache.py@0.34.0, config.py@0.8.5).
OPTIONAL_SINCE: dict[str, Version] = {"gpu-memory-utilization": (0, 34, 0), "num-gpu-blocks-override": (0, 8, 5)}
#: --device-memory-utilization, a second option string of --gpu-memory-utilization (engine/arg_utils.py@0.31.0).
#: --swap-space left CacheConfig in 0.18.0 (no such option from then on: not typed here).
SWAP_SPACE_UNTIL: Version = (0, 18, 0)
#: ``--compilation-config`` (``-O '<json>'`` to 0.11): 0.9.0 ``json.loads`` in a lambda (``invalid <lambda> value``),
#: from 0.9.2 pydantic's ``validate_json`` re-raised as ``ArgumentTypeError(repr(ValidationError))``; up to 0.8.x
#: ``ast.literal_eval``, whose SyntaxError is a traceback, not argparse's (not rendered). ``-cc`` from 0.12.0.
COMPILATION_JSON_SINCE: Version = (0, 9, 0)
COMPILATION_VALIDATED_SINCE: Version = (0, 9, 2)
COMPILATION_CC_SINCE: Version = (0, 12, 0)
#: FlexibleArgumentParser (utils/__init__.py@0.9.2-0.11.0) folds every ``-x.k=v`` into one JSON value appended as
#: ``-x <json>`` after all other arguments; 0.9.0 folds only ``--x.k=v`` (utils.py@0.9.0 ``startswith("--")``).
SHORT_DOTTED_SINCE: Version = (0, 9, 2)
#: From 0.12.0 only ``-O <n>`` with n in 0-3 becomes ``--optimization-level n``; any other ``-O <word>`` stays ``-O``,
#: which no parser option is (utils/argparse_utils.py@0.12.0, @0.14.0 to @0.34.0: ``args[i + 1] in {"0", "1", "2",
#: "3"}``; engine/arg_utils.py registers only ``--optimization-level``).
SPACED_O_LEVELS = frozenset({"0", "1", "2", "3"})
#: ``choices=`` per release, (first release, choices as argparse lists them; None: no ``choices=``): argparse checks
#: each occurrence after its type and refuses ``invalid choice: 'fp9' (choose from 'auto', ...)`` (CPython 3.12
#: ``_check_value``: the value's repr, the choices' reprs joined by ", "). --dtype: an explicit list in
#: engine/arg_utils.py@0.8.5, then ``sorted(ModelDType)`` (``literal_to_kwargs``, read at 0.11.0, 0.16.0, 0.19.0,
#: 0.28.0, 0.34.0). --kv-cache-dtype: an explicit list before 0.8.5 (auto, fp8, fp8_e5m2, fp8_e4m3), then
#: ``sorted(CacheDType)`` (config.py@0.8.5/0.9.2, config/cache.py@0.10.2/0.11.0/0.16.0/0.19.0/0.28.0; fp8_inc first
#: read in 0.10.2); from
#: 0.34.0 the field is ``CacheDType | str``, a ``metavar`` without choices, and config validation refuses an unknown
#: name instead. Each boundary is the first release read with that list (the releases between were not read).
CHOICES: dict[str, tuple[tuple[Version, tuple[str, ...] | None], ...]] = {
    "dtype": (((0, 0, 0), ("auto", "half", "float16", "bfloat16", "float", "float32")),
              ((0, 11, 0), ("auto", "bfloat16", "float", "float16", "float32", "half"))),
    "kv-cache-dtype": (
        ((0, 0, 0), ("auto", "fp8", "fp8_e5m2", "fp8_e4m3")),
        ((0, 8, 5), ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")),
        ((0, 10, 2), ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")),  # config.py@0.9.2 has no fp8_inc
        ((0, 11, 0), ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")),
        ((0, 16, 0), ("auto", "bfloat16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc")),
        ((0, 19, 0), ("auto", "bfloat16", "float16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc")),
        ((0, 28, 0), ("auto", "bfloat16", "float16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
                      "fp8_per_token_head", "int4_per_token_head", "int8_per_token_head", "nvfp4", "nvfp4_4over6",
                      "turboquant_3bit_nc", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_k8v4")),
        ((0, 34, 0), None),
    ),
}
#: ``python -m vllm.entrypoints.openai.api_server`` takes the ``model_tag`` positional from 0.10.0 (``make_arg_parser``
#: in entrypoints/openai/cli_args.py@0.10.0 l.214, nargs='?'; entrypoints/common/cli_args.py@0.34.0); @0.9.2 has none.
API_SERVER_MODEL_TAG_SINCE: Version = (0, 10, 0)
#: From 0.11.1 FlexibleArgumentParser moves ``vllm serve``'s ``--model M`` (the exact word, or ``--model=M``) to the
#: front as its model tag (utils/__init__.py@0.11.1, utils/argparse_utils.py@0.12.0-0.34.0, ``re.match`` of
#: ``^--model(=.+|$)``), so every bare word is left over; up to 0.11.0 it raised ValueError instead (not rendered).
SERVE_MODEL_HOISTED_SINCE: Version = (0, 11, 1)
#: Flags read with ``StoreBoolean`` (utils.py, ``nargs='?'``: true/false after ``=`` or as the next word), to the first
#: release read without it (engine/arg_utils.py@0.8.3 has the first two, @0.8.5 none; @0.8.0 the third, @0.8.3 not).
STORE_BOOLEAN_UNTIL: dict[str, Version] = {
    "enable-chunked-prefill": (0, 8, 5), "multi-step-stream-outputs": (0, 8, 5),
    "disable-logprobs-during-spec-decoding": (0, 8, 3),
}
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
SERVE_USAGE = "usage: vllm serve [model_tag] [options]"
#: ``vllm serve``'s model_tag is required (usage ``vllm serve <model_tag> [options]``, no ``nargs``) to 0.8.0
#: (vllm/scripts.py@0.5.5-0.7.2, entrypoints/cli/serve.py@0.7.3/0.8.0) and ``nargs='?'`` from 0.8.3 (serve.py@0.8.3).
MODEL_TAG_OPTIONAL_SINCE: Version = (0, 8, 3)


def serve_usage(version: Version | None) -> str:
    """``vllm serve``'s usage line in ``version`` (None: the newest)."""
    return SERVE_USAGE if version is None or version >= MODEL_TAG_OPTIONAL_SINCE else \
        "usage: vllm serve <model_tag> [options]"


@dataclass(frozen=True)
class ArgError:
    """argparse's refusal: the message after ``error: `` (``argument --max-model-len: invalid ... value: '16Ki'``)."""

    flag: str
    message: str
    raised: bool = False  # a ValueError the flag's action raises while argparse consumes it (``argv_boolean``)

    def lines(self, prog: str = "vllm serve", version: Version | None = None) -> list[str]:
        """What the process writes to stderr before it exits 2. ``vllm serve``'s leftovers are refused by the
        top-level ``vllm`` parser, under its own usage (``argv_cli``). ``python -m vllm.entrypoints.openai.api_server``
        (``api_server.py``) prints argparse's generated usage of every option first, which is not rendered here."""
        if prog == "vllm serve" and self.message.startswith(argv_cli.UNRECOGNIZED):
            return argv_cli.leftovers_refused(self.message, version)
        usage = [serve_usage(version)] if prog == "vllm serve" else []
        return [*usage, f"{prog}: error: {self.message}"]


def _human(value: str, version: Version) -> int:
    text = value.strip()
    match = _HUMAN.fullmatch(text)
    if match:
        number, suffix = match.groups()
        decimal = {"k": 10**3, "m": 10**6, "g": 10**9, **({"t": 10**12} if version >= TERA_SINCE else {})}
        binary = {"K": 2**10, "M": 2**20, "G": 2**30, **({"T": 2**40} if version >= TERA_SINCE else {})}
        if suffix in decimal:
            return int(float(number) * decimal[suffix])
        if suffix in binary:
            if "." in number:
                raise _TypeError(f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean to use "
                                 f"{number}{suffix.lower()} instead?")
            return int(number) * binary[suffix]
    return int(text)


class _TypeError(Exception):
    """argparse.ArgumentTypeError: argparse prints its message as it is."""


def _type_name(flag: str, version: Version) -> str | None:
    """The ``__name__`` of the flag's ``type=`` in ``version`` (None: a flag this module does not judge)."""
    if flag == "max-model-len" and version >= OR_AUTO_SINCE:
        return "human_readable_int_or_auto"
    since = HUMAN_SINCE.get(flag)
    if since is not None and version >= since:
        return "human_readable_int"
    if flag in FLOAT_FLAGS:
        return "float"
    return "int" if flag in INT_FLAGS else None


def _compilation(flag: str, value: str, version: Version) -> str | None:
    """The refusal of a ``--compilation-config`` (or, to 0.11, ``-O '<json>'``) that is not JSON."""
    if version < COMPILATION_JSON_SINCE or (flag == "optimization-level" and
                                           (version >= COMPILATION_CC_SINCE or not value.startswith("{"))):
        return None
    try:
        json.loads(value)
    except ValueError:
        names = _names("compilation-config", version)
        if version < COMPILATION_VALIDATED_SINCE:
            return f"argument {names}: invalid <lambda> value: {value!r}"
        try:
            from pydantic_core import from_json
            from_json(value)
            detail = "invalid JSON"
        except ValueError as err:
            detail = str(err)
        return (f"argument {names}: 1 validation error for CompilationConfig\n  Invalid JSON: {detail} "
                f"[type=json_invalid, input_value={value!r}, input_type=str]")
    if (words := argv_compilation.unexpected(value, version)) is not None:
        return f"argument {_names('compilation-config', version)}: {words}"
    return None


def convert(flag: str, value: str, version: Version) -> str | None:
    """argparse's message refusing ``value`` for ``--flag`` (canonical name), None when the type takes it."""
    if flag in ("compilation-config", "optimization-level"):
        return _compilation(flag, value, version)
    name = _type_name(flag, version)
    if name is None or (flag == "swap-space" and version >= SWAP_SPACE_UNTIL):
        return None
    since = OPTIONAL_SINCE.get(flag)
    if since is not None and version >= since and name in ("int", "float"):
        if value in ("", "None"):
            return None
        try:
            (int if name == "int" else float)(value)
        except ValueError:
            return f"argument {_names(flag, version)}: Value {value} cannot be converted to <class '{name}'>."
        return None
    try:
        if name == "human_readable_int_or_auto" and (value.strip() == "-1" or value.strip().lower() == "auto"):
            return None
        if name.startswith("human_readable_int"):
            _human(value, version)
        elif name == "float":
            float(value)
        else:
            int(value)
    except _TypeError as exc:
        return f"argument {_names(flag, version)}: {exc}"
    except ValueError:
        return f"argument {_names(flag, version)}: invalid {name} value: {value!r}"
    return None


def choice(flag: str, value: str, version: Version) -> str | None:
    """argparse's message refusing ``value`` outside ``--flag``'s ``choices`` in ``version``, None when allowed."""
    if flag not in CHOICES:
        listed = argv_choices.choices(flag, version)
        if listed is None or (flag == "quantization" and value == "None"):  # nullable_str / optional_type: None
            return None
        typed: object = int(value) if flag == "block-size" else value  # ``convert`` took the int already
        if typed in listed:
            return None
        allowed_text = ", ".join(map(repr, listed))
        return f"argument {_names(flag, version)}: invalid choice: {typed!r} (choose from {allowed_text})"
    allowed = next((c for since, c in reversed(CHOICES.get(flag, ())) if version >= since), None)
    if allowed is None or value in allowed:
        return None
    return f"argument {_names(flag, version)}: invalid choice: {value!r} (choose from {', '.join(map(repr, allowed))})"


def explicit(flag: str, text: str, version: Version) -> str | None:
    """argparse's refusal of ``--flag=text`` on a boolean flag that takes no value in ``version`` (CPython 3.12
    ``consume_optional``: ``ignored explicit argument``, named by the action's option strings joined by ``/``); None
    for a StoreBoolean, which takes it."""
    until = STORE_BOOLEAN_UNTIL.get(flag)
    if until is not None and version < until:
        return None
    return f"argument {boolean_names(flag, version)}: ignored explicit argument {text!r}"


def boolean_names(flag: str, version: Version) -> str:
    """How argparse names a no-value flag's action (CPython 3.12 ``_get_action_name``: its option strings joined by
    ``/``): ``--x`` for store_true; for a BooleanOptionalAction each long string followed by its ``--no-`` form
    (``--enable-expert-parallel/--no-enable-expert-parallel/-ep``); from 0.33.0 an EnableDisableAction with an inverse
    shows the strings given and the inverse only (utils/argparse_utils.py@0.33.0 ``visible_option_strings``:
    ``--enable-lora/--disable-lora``), the same whichever of them was written."""
    if store_true(flag, version):
        return f"--{flag}"
    owner = flag
    if flag.startswith(("enable-", "disable-")) and argv_options.inverse(flag, version) is None:
        other = argv_options.inverse_of(f"--{flag}")[2:]  # --disable-lora: the inverse --enable-lora's action added
        owner = other if argv_options.inverse(other, version) == f"--{flag}" else flag
    given = _names(owner, version).split("/")
    if (inverse := argv_options.inverse(owner, version)) is not None:
        return "/".join([*given, inverse])
    return "/".join(w for s in given for w in ((s, f"--no-{s[2:]}") if s.startswith("--") else (s,)))


def store_true(flag: str, version: Version) -> bool:
    """Whether ``--flag`` is ``store_true`` in ``version``: then the parser has no ``--no-flag`` option string. Read
    per release from the wheels (``argv_options.store_true``): ``--enforce-eager`` is store_true to 0.8.5 and a
    dataclass field's BooleanOptionalAction from 0.9.0 (engine/arg_utils.py@0.9.0 ``**model_kwargs["enforce_eager"]``),
    ``--headless`` store_true in every release that has it (entrypoints/cli/serve.py@0.9.0-0.34.0)."""
    return argv_options.store_true(flag, version)


def unknown_negations(negated: Iterable[tuple[str, str]], version: Version) -> list[str]:
    """The ``--no-x`` words (flag, word as written) ``version``'s parser has no option for: ``x`` is ``store_true``
    there, so argparse (CPython 3.12 ``_parse_optional``: no exact, ``=``-split or prefix match) keeps the word as an
    unknown option and refuses it with the leftovers, ``unrecognized arguments: --no-enforce-eager``."""
    return [word for flag, word in negated if store_true(flag, version)]


def unknown_shorts(shorts: Iterable[tuple[str, str | None, str | None]], version: Version) -> list[str]:
    """The words of single-dash options ``version``'s parser has none for, as argparse leaves them over: ``shorts`` is
    (spelling as written, text after ``=`` or None, the next word taken as its value or None) per option.

    * ``-cc`` (and ``-cc.k=v``) before 0.12.0: engine/arg_utils.py@0.10.1/0.11.0 register ``--compilation-config``
      with ``-O`` only, and no option starts with ``-c``; 0.9.2-0.11.x fold the dotted keys into ``-cc <json>`` first;
    * ``-O <word>`` from 0.12.0 with a word other than 0-3 (``SPACED_O_LEVELS``).
    """
    out: list[str] = []
    folded: dict[str, object] = {}
    for spelled, attached, value in shorts:
        if spelled == "-O" and attached is None and value is not None and version >= COMPILATION_CC_SINCE \
                and value not in SPACED_O_LEVELS:
            out += ["-O", value]
        elif (spelled == "-cc" or spelled.startswith("-cc.")) and version < COMPILATION_CC_SINCE:
            if spelled.startswith("-cc.") and version >= SHORT_DOTTED_SINCE:
                text = attached if attached is not None else value or ""
                try:
                    folded[spelled[4:]] = json.loads(text)
                except ValueError:
                    folded[spelled[4:]] = text
                continue
            out.append(spelled if attached is None else f"{spelled}={attached}")
            if attached is None and value is not None:
                out.append(value)
    if folded:
        out += ["-cc", json.dumps(folded)]
    return out


def first_error(options: Iterable[tuple[str, str | None]], version: Version, positionals: Iterable[str] = (),
                api_server: bool = False, booleans: Iterable[tuple[str, str]] = (),
                negated: Iterable[tuple[str, str]] = (),
                shorts: Iterable[tuple[str, str | None, str | None]] = (),
                spelled: Sequence[argv_added.Item] = (), model_tag_required: bool = False,
                raised: tuple[str, ...] | None = None, later: bool = False) -> ArgError | None:
    """argparse refuses each option where it consumes it, in argv order (``argv_order``), and stops at the first:
    a value its type or choices refuse (a repeated flag's first value too, though the last one wins when all parse),
    a value of None (a flag that takes one but got none: ``expected one argument``), ``booleans``' (flag, text) of
    each boolean written ``--flag=text`` (``explicit``), ``raised``: (flag, ValueError line, word) of a StoreBoolean
    given a word other than true/false (``argv_boolean.raised``; ends the parse with a traceback). Only an ambiguous
    prefix comes before them all (argparse sorts every word first). ``spelled``: every long option and bare
    positional in argv order with its place (``argv_added.placed``), which orders them; an option the release lacks
    (``argv_added.SPAN``) is not converted, and its words join the leftovers with the positionals after the model tag,
    in argv order (``argv_added.leftovers``). Positionals beyond the parser's one ``model_tag`` (``nargs='?'``; none in
    the api_server module before ``API_SERVER_MODEL_TAG_SINCE``) are left over and refused last, all in one message,
    after a missing required model tag. ``negated``: (flag, word) of each ``--no-flag`` written, refused with the
    leftovers where the release has no such form; ``shorts``: single-dash options as written (``unknown_shorts``),
    whose unknown ones are leftovers too. A one-item ``"--max-model-len 16384"`` is a positional here (argparse: "if
    it contains a space, it was meant to be a positional"): the model tag when none is given before it, else a
    leftover. ``later``: a release past the newest read, whose parser takes what it may have added
    (``argv_added.unmodelled``)."""
    serve = not api_server
    taken = argv_added.unmodelled(spelled, version, later, serve)
    spelled = [i for i in spelled if i not in taken]
    for _name, words, _at in spelled:  # argparse sorts every word into option or positional before it converts any
        if words and (message := argv_options.ambiguous(words[0], version, serve)) is not None:
            return ArgError("", message)
    negated = list(negated)
    shorts = list(shorts)
    unknown = unknown_shorts(shorts, version)
    skip = {("optimization-level", v) for s_, a, v in shorts if s_ == "-O" and a is None and v and "-O" in unknown}
    skip |= {("compilation-config", v) for s_, a, v in shorts if s_ == "-cc" and version < COMPILATION_CC_SINCE}
    options = list(options)
    lacked = [i for i in spelled if argv_added.lacking(i, version, serve)]  # a ``--no-x`` of a store_true x too
    # a store_true flag's own ``--x=1`` is still judged when its ``--no-x`` is left over
    absent = argv_added.skipped(options, version) | {i[0] for i in lacked if not i[1][0].startswith("--no-")}
    ordered = argv_order.steps(options, booleans, spelled)  # then each option where argparse consumes it
    raised_at = _raised_at(ordered, raised)
    for n, (flag, value, eq_form) in enumerate(ordered):
        if raised is not None and n == raised_at:
            return ArgError(flag, raised[1], raised=True)
        if (flag, value) in skip or flag in absent or (flag.startswith("cc.") and version < COMPILATION_CC_SINCE):
            continue  # an unknown option's words: left over, not converted
        if eq_form:
            if any(f == flag for f, _w in negated) and store_true(flag, version):
                continue  # `--no-x=1` where there is no `--no-x`: an unknown option, not an explicit value
            if value is not None and (message := explicit(flag, value, version)) is not None:
                return ArgError(flag, message)
            continue
        if value is None:
            return ArgError(flag, f"argument {_names(flag, version)}: expected one argument")
        if (message := convert(flag, value, version) or choice(flag, value, version)) is not None:
            return ArgError(flag, message)
    if model_tag_required and version < MODEL_TAG_OPTIONAL_SINCE and not list(positionals) and not any(
            len(i[1]) > 1 for i in spelled if argv_added.lacking(i, version, serve)):  # no word for it at all
        return ArgError("", "the following arguments are required: model_tag")
    hoisted = not api_server and version >= SERVE_MODEL_HOISTED_SINCE and any(
        words and re.match(r"^--model(=.+|$)", words[0]) for _n, words, _at in spelled)
    takes = 0 if (api_server and version < API_SERVER_MODEL_TAG_SINCE) or hoisted else 1
    late = argv_added.leftovers(spelled, version, takes, serve)
    left = {i[1][0] for i in lacked}  # in ``late`` already, in argv order
    extra = [w for w in unknown_negations(negated, version) if w not in left]
    extra += (list(positionals)[takes:] if late is None else late) + unknown
    return ArgError("", f"unrecognized arguments: {' '.join(extra)}") if extra else None


def _raised_at(ordered: Sequence[argv_order.Step], raised: tuple[str, ...] | None) -> int | None:
    """Where argparse reaches the StoreBoolean ``raised`` names ((flag, line, word): ``argv_boolean.raised``): the
    occurrence given that word, else the flag's first (a script's flags hold the shell's last value)."""
    if raised is None:
        return None
    hits = [n for n, (flag, _v, _e) in enumerate(ordered) if flag == raised[0]]
    return next((n for n in hits if len(raised) < 3 or ordered[n][1] == raised[2]), hits[0] if hits else None)
