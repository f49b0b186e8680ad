"""Argv that vLLM's argument parser refuses whatever its flag table: ``<prog>: error: ...``, exit 2, nothing starts.

Read in the PyPI wheels of 0.8.5, 0.11.0, 0.16.0, 0.19.0, 0.28.0 and 0.34.0 (argparse as CPython 3.12 words it):

* a value outside ``choices=``: ``argument --dtype: invalid choice: 'float17' (choose from 'auto', ...)``. --dtype
  lists an explicit order in engine/arg_utils.py@0.8.5 and ``sorted(ModelDType)`` from 0.11.0 (``literal_to_kwargs``,
  every release read to 0.34.0); --kv-cache-dtype is ``sorted(CacheDType)`` from 0.8.5 to 0.28.0, and from 0.34.0 a
  ``CacheDType | str`` field, a ``metavar`` not ``choices``, refused by config validation instead (not judged here);
* a flag that takes a value given none (the last word, or followed by an option): ``argument --max-model-len:
  expected one argument`` (``expected at least one argument`` for ``nargs='+'``), every option string of the action
  named as the release registers them (``argument --tensor-parallel-size/-tp``);
* an empty or non-numeric integer (``--max-model-len ""``): ``argument --max-model-len: invalid int value: ''``,
  ``human_readable_int`` from 0.8.4, ``human_readable_int_or_auto`` from 0.14.0 (``values.HUMAN_INT_SINCE``): each
  strips the text and ends in ``int()``, which refuses it;
* a value on a boolean flag that takes none (``--enforce-eager=true``): ``argument --enforce-eager: ignored explicit
  argument 'true'``, the flag's option strings as that release's action has them (``booleans``); only the legacy
  StoreBoolean flags took true/false, up to 0.8.3, and any other word they take (the next one that is no option:
  ``vllm serve --enable-chunked-prefill MODEL``) raises StoreBoolean's ValueError, exit 1 (``store_boolean_value``);
* a value outside the choices, or one its ``type=`` cannot convert, of --block-size, --quantization,
  --tokenizer-mode, --load-format and the typed memory flags (``choices``, read per release); a
  ``--compilation-config`` (or ``-O '<json>'`` up to 0.11) that is not JSON (``compilation.refusal``);
* a positional beyond the one ``model_tag`` (``nargs='?'``) of ``vllm serve`` (entrypoints/cli/serve.py@0.8.5,
  entrypoints/openai/cli_args.py ``make_arg_parser`` from 0.10.0, entrypoints/common/cli_args.py@0.34.0):
  ``unrecognized arguments: extra-word``. ``python -m vllm.entrypoints.openai.api_server`` builds its parser with
  ``make_arg_parser`` in every release read, which adds ``model_tag`` from 0.10.0 (a tag the module never reads:
  ``AsyncEngineArgs.from_cli_args`` takes ``--model``); to 0.9.2 it has no positional at all, so any is refused
  (entrypoints/openai/cli_args.py@0.5.5-0.9.2: no positional argument).

A word taken from a variable or a template (``$X``, ``{{ .X }}``) is not judged: its value is not known here. A word
the kubelet's expansion made literal (an undefined ``$(X)``, a ``$$(X)`` escape: ``ServerCommand.literal``) is what
vLLM receives, and judged like any other: ``--max-model-len $(X)`` is ``invalid human_readable_int value: '$(X)'``.
"""

from __future__ import annotations

import json
import shlex

from vllm_remedy.vllm import hf_dotted, hf_overrides
from vllm_remedy.vllm.cmdline import choices, compilation, release_flags
from vllm_remedy.vllm.cmdline.booleans import option_strings, store_boolean
from vllm_remedy.vllm.cmdline.command import ServerCommand
from vllm_remedy.vllm.cmdline.flags import Kind
from vllm_remedy.vllm.cmdline.parse import Option, model_hoisted
from vllm_remedy.vllm.cmdline.values import HUMAN_INT_SINCE, suffixed, vllm_int
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

Version = tuple[int, int, int]
_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")  # engine/arg_utils.py@0.8.5, in its order
_SORTED_DTYPES_SINCE: Version = (0, 11, 0)
#: --kv-cache-dtype's ``choices=`` as argparse lists them, from each release read until the next one read: an explicit
#: list in engine/arg_utils.py@0.6.5 (to 0.8.3), then ``sorted(CacheDType)`` (config.py@0.8.5 and @0.9.2 without
#: fp8_inc, config/cache.py@0.10.2 with it, @0.11.0, @0.16.0, @0.19.0, @0.28.0).
KV_CACHE_DTYPES: dict[Version, tuple[str, ...]] = {
    (0, 0, 0): ("auto", "fp8", "fp8_e5m2", "fp8_e4m3"),
    (0, 8, 5): ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"),
    (0, 10, 2): ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"),
    (0, 11, 0): ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"),
    (0, 16, 0): ("auto", "bfloat16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc"),
    (0, 19, 0): ("auto", "bfloat16", "float16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc"),
    (0, 28, 0): ("auto", "bfloat16", "float16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
                 "fp8_per_token_head", "int4_per_token_head", "int8_per_token_head", "nvfp4", "nvfp4_4over6",
                 "turboquant_3bit_nc", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_k8v4"),
}
#: The last release read where --kv-cache-dtype is ``choices=`` (0.34.0 validates it in config/cache.py instead).
_KV_CHOICES_UNTIL: Version = (0, 28, 0)
_OR_AUTO_SINCE: Version = (0, 14, 0)
#: The first release whose api_server module parser takes a ``model_tag`` (entrypoints/openai/cli_args.py@0.10.0 l.214).
API_SERVER_MODEL_TAG_SINCE: Version = (0, 10, 0)


class Refused(str):
    """The argv words as written (``--kv-cache-dtype fp9``, ``extra-word``) carrying argparse's ``message``: a ``str``,
    so callers of ``unrecognized.unrecognized`` take it as they take an unknown flag's words. ``advice`` is set on a
    refusal of the command as a whole (``serve_model``: no model tag, ``--model``), which no flag's removal fixes;
    ``exit_code`` is 1 for the ValueError vLLM's CLI raises around argparse."""

    message: str
    advice: str | None
    exit_code: int

    def __new__(cls, words: str, message: str, advice: str | None = None, exit_code: int = 2) -> Refused:
        obj = super().__new__(cls, words)
        obj.message = message
        obj.advice = advice
        obj.exit_code = exit_code
        return obj


def refused(server: ServerCommand, version: str | None) -> list[Refused]:
    """Each part of ``server``'s argv that vLLM ``version``'s parser refuses (the newest rules when None): options in
    argv order, then stray positionals (argparse reports those last, once every option parsed)."""
    if not _judged(server.entrypoint):
        return []
    v = parse_version(version) or NEWEST_RELEASE
    out: list[Refused] = []
    short_cc = [o for o in server.options if v < compilation.OPT_LEVEL_SINCE and _short_cc(o.flag.spelled)]
    for opt in server.options:
        flag = opt.flag
        if "." in flag.name or flag.kind is Kind.UNKNOWN or opt in short_cc:
            continue
        words = " ".join(shlex.quote(t.value) for t in opt.tokens)  # `--max-model-len ''`, as a shell would show it
        if server.placeholder(opt.tokens):
            continue
        if flag.kind in (Kind.BOOLEAN, Kind.STORE_TRUE):
            if (raised := store_boolean_value(server, opt, v)) is not None:
                return [*out, raised]  # raised while argparse consumes it: nothing after it is read
            if (message := _boolean(server, opt, v)) is not None:
                out.append(Refused(words if flag.attached is not None else shlex.quote(opt.values[0]), message))
            continue
        if flag.negated:
            continue
        if not opt.values and flag.attached is None and flag.kind in (Kind.VALUE, Kind.MULTI):
            many = "at least one argument" if flag.kind is Kind.MULTI else "one argument"
            out.append(Refused(words, f"argument {_names(flag.name, v)}: expected {many}"))
        elif opt.values and (message := _value(flag.name, opt.values[0], v, flag.attached is not None)) is not None:
            out.append(Refused(words, message))
    if (message := compilation.dotted_refusal(server.flags, v)) is not None:  # the dict is parsed after the rest
        dotted = [o for o in server.options if o.flag.name.startswith(("compilation-config.", "cc."))]
        out.append(Refused(" ".join(shlex.quote(t.value) for o in dotted for t in o.tokens), message))
    out += [Refused(words, message) for words, message in hf_dotted.refusal(server, v)  # before 0.9.0: unknown
            if not server.placeholder([t for o in hf_dotted.dotted(server) for t in o.tokens])]
    out += [Refused(shlex.quote(w), f"unrecognized arguments: {w}") for w in _strays(server, v)]
    if short_cc and not server.placeholder([t for o in short_cc for t in o.tokens]):
        written = " ".join(shlex.quote(t.value) for o in short_cc for t in o.tokens)
        out.append(Refused(written, f"unrecognized arguments: {' '.join(_cc_leftovers(short_cc, v))}"))
    return out


def _short_cc(spelled: str) -> bool:
    return spelled == "-cc" or spelled.startswith("-cc.")


def _cc_leftovers(opts: list[Option], v: Version) -> list[str]:
    """What argparse leaves over of ``-cc`` options before 0.12.0, where ``--compilation-config``'s short form is ``-O``
    (engine/arg_utils.py@0.10.1/@0.11.0: no option string starts with ``-c``): FlexibleArgumentParser folds every
    ``-cc.k=v`` into one ``-cc <json>`` appended last from 0.9.2 (utils/__init__.py@0.9.2-0.11.0, ``"-"`` and a dot),
    not in 0.9.0 (``"--"`` only, utils.py@0.9.0) nor before; a plain ``-cc <json>`` stays as written."""
    words: list[str] = []
    folded: dict[str, object] = {}
    for opt in opts:
        flag = opt.flag
        if flag.spelled.startswith("-cc.") and v >= compilation.DOTTED_SINCE:
            text = flag.attached if flag.attached is not None else (opt.values[0] if opt.values else "")
            try:
                folded[flag.spelled[4:]] = json.loads(text)
            except ValueError:
                folded[flag.spelled[4:]] = text
            continue
        words += [t.value for t in opt.tokens]
    return [*words, *(["-cc", json.dumps(folded)] if folded else [])]


def _judged(entrypoint: str) -> bool:
    """vLLM's own parsers: ``vllm serve`` (or the image's entrypoint) and the OpenAI api_server module."""
    return entrypoint.endswith(" serve") or entrypoint == "image default" or "openai.api_server" in entrypoint


def _value(flag: str, value: str, v: Version, attached: bool = False) -> str | None:
    if flag == "optimization-level" and not attached and v >= compilation.OPT_LEVEL_SINCE:
        # from 0.12.0 only `-O <0-3>` becomes --optimization-level; any other `-O <word>` reaches argparse, which has
        # no -O option any more (utils/argparse_utils.py@0.12.0-0.34.0)
        return None if value in ("0", "1", "2", "3") else f"unrecognized arguments: -O {value}"
    if flag == hf_overrides.FLAG:  # JSON read by the flag's type (``hf_overrides.argparse_refusal``)
        return hf_overrides.argparse_refusal(value, v)
    if flag == "compilation-config" or (flag == "optimization-level" and not attached):
        return compilation.refusal(value, v, dash_o=flag == "optimization-level")  # -O '{...}' up to 0.11
    respelled = (str(choices.type_of(flag, v)).startswith("int") and vllm_int(value, flag, v) is None
                 and (suffixed(value) or _number(value)))
    if not respelled and (message := choices.refusal(flag, value, v)) is not None:
        return message  # (16k, 16000.0 for an integer: ``values.refusal`` words them, and the plan respells them)
    if flag == "dtype" and value not in _DTYPES:
        return _invalid_choice(flag, value, _dtype_choices(v))
    if flag == "kv-cache-dtype" and v <= _KV_CHOICES_UNTIL and value not in (kv := kv_cache_dtypes(v)):
        return _invalid_choice(flag, value, kv)
    since = HUMAN_INT_SINCE.get(flag)
    if since is not None and vllm_int(value, flag, v) is None and not suffixed(value) and not _number(value):
        if flag == "max-model-len" and value.strip().lower() in ("auto", "-1"):
            return None  # 0.14.0's auto-fit, which the memory settings judge by release (``EngineSettings``)
        name = ("human_readable_int_or_auto" if flag == "max-model-len" and v >= _OR_AUTO_SINCE else
                "human_readable_int" if v >= since else "int")
        return f"argument --{flag}: invalid {name} value: {value!r}"
    return None


def kv_cache_dtypes(v: Version) -> tuple[str, ...]:
    """--kv-cache-dtype's choices in release ``v`` (up to ``_KV_CHOICES_UNTIL``): those of the newest release read at
    or before it; argparse refuses any other value there, whatever a later release takes."""
    return next(c for since, c in sorted(KV_CACHE_DTYPES.items(), reverse=True) if v >= since)


#: StoreBoolean's own refusal of a word other than true/false (``__call__``: ``values.lower()`` against "true" and
#: "false", else ``raise ValueError``; engine/arg_utils.py@0.5.5 l.1023, @0.6.3 l.1127; utils.py@0.6.5 l.1112, @0.8.0
#: l.1154, @0.8.3 l.1219). argparse catches only its own ArgumentError, so the ValueError is a traceback, exit 1.
_INVALID_BOOLEAN = "ValueError: Invalid boolean value: {}. Expected 'true' or 'false'."


def store_boolean_value(server: ServerCommand, opt: Option, v: Version) -> Refused | None:
    """The ValueError a StoreBoolean flag raises on the word argparse gave it (``--enable-chunked-prefill=on``, or the
    next word that is no option: ``vllm serve --enable-chunked-prefill MODEL`` takes the model, as nargs='?' does
    whatever positional is still wanted), or None: true/false in any case, no word (``const="True"``), or a release
    that does not read the flag with StoreBoolean (``booleans.store_boolean``)."""
    flag = opt.flag
    if flag.negated or not opt.values or not store_boolean(flag.name, v) or server.placeholder(opt.tokens):
        return None
    word = opt.values[0]
    if word.lower() in ("true", "false"):
        return None
    written = " ".join(shlex.quote(t.value) for t in opt.tokens)
    if flag.attached is None and not server.positionals and server.entrypoint.endswith(" serve"):
        advice = (f"name the model first (vllm serve {word} ... --{flag.name}), or write --{flag.name} true before "
                  "it: the flag takes the next word as its value")
    else:
        advice = f"write --{flag.name} alone, or with true or false"
    return Refused(written, _INVALID_BOOLEAN.format(word), advice, exit_code=1)


def _boolean(server: ServerCommand, opt: Option, v: Version) -> str | None:
    """argparse's refusal of a value on a boolean flag in release ``v`` (``booleans``): after ``=`` on a flag that
    takes none, or a true/false word parsed as a legacy StoreBoolean's value where the flag no longer takes one (left
    over once the parser's ``model_tag`` is taken by an earlier positional)."""
    flag = opt.flag
    legacy = store_boolean(flag.name, v) and not flag.negated
    if flag.negated and option_strings(flag.name, v) == f"--{flag.name}":
        return None  # no `--no-x` option string in that release: an unknown option (``unrecognized._no_negation``)
    if flag.attached is not None:
        if legacy:
            return None  # StoreBoolean: true/false taken (any other word raises ValueError, not argparse's refusal)
        return f"argument {option_strings(flag.name, v)}: ignored explicit argument {flag.attached!r}"
    if opt.values and not legacy and server.positionals:
        return f"unrecognized arguments: {opt.values[0]}"
    return None


def _names(flag: str, v: Version) -> str:
    """The flag's action as argparse names it in release ``v``: every option string, ``--tensor-parallel-size/-tp``
    (``release_flags.shown``, read per release), ``--flag`` where no release read says."""
    return release_flags.shown(f"--{flag}", v) or f"--{flag}"


def _number(value: str) -> bool:
    """A decimal or exponent (``16000.0``, ``1e4``): refused too, but ``values.refusal`` words those already."""
    try:
        float(value)
    except ValueError:
        return False
    return True


def _dtype_choices(v: Version) -> tuple[str, ...] | None:
    if v == (0, 8, 5):
        return _DTYPES
    return tuple(sorted(_DTYPES)) if v >= _SORTED_DTYPES_SINCE else None


def _invalid_choice(flag: str, value: str, choices: tuple[str, ...] | None) -> str:
    """argparse's words; a release whose list was not read gets them without it (every release read refuses it)."""
    listed = f" (choose from {', '.join(map(repr, choices))})" if choices else ""
    return f"argument --{flag}: invalid choice: {value!r}{listed}"


#: ``vllm serve``'s ``model_tag`` is required (no ``nargs``; usage ``vllm serve <model_tag> [options]``) to 0.8.0
#: (vllm/scripts.py@0.5.5 l.125, @0.7.2 l.160; entrypoints/cli/serve.py@0.7.3 l.46, @0.8.0 l.45), ``nargs='?'`` from
#: 0.8.3 (entrypoints/cli/serve.py@0.8.3 l.39).
MODEL_TAG_OPTIONAL_SINCE: Version = (0, 8, 3)
#: ``vllm serve --model M``: from 0.8.3 ``FlexibleArgumentParser.parse_args`` raises before argparse when a word is
#: exactly ``--model`` (``any(arg == '--model' for arg in args)``, utils.py@0.8.3 l.1245-1252, @0.9.0,
#: utils/__init__.py@0.9.2 l.1476-1481, @0.11.0 l.1859-1864; ``--model=M`` passes); from 0.11.1 it moves the model to
#: the front instead (utils/__init__.py@0.11.1, utils/argparse_utils.py@0.12.0 l.190-218). Before 0.8.3 ``serve``
#: raises after parsing when ``args.model`` is not ``EngineArgs.model`` (vllm/scripts.py@0.5.5 l.29-32, @0.7.2;
#: entrypoints/cli/serve.py@0.7.3 l.27-30, @0.8.0 l.26-29), ``--model=M`` included. A traceback, exit 1.
SERVE_MODEL_SINCE: Version = (0, 5, 5)
SERVE_MODEL_PRE_PARSE_SINCE: Version = (0, 8, 3)
SERVE_MODEL_HOISTED_SINCE: Version = (0, 11, 1)
_DEFAULT_MODEL = "facebook/opt-125m"  # EngineArgs.model, every release read to 0.11.0
_MODEL_WORDS = "With `vllm serve`, you should provide the model as a positional argument"
_MODEL_FLAG_WORDS = "instead of via the `--model` option."


def model_flag_refusal(server: ServerCommand, v: Version, parsed: bool) -> Refused | None:
    """The ValueError vLLM's CLI raises for ``vllm serve --model M`` in release ``v``, or None: before argparse runs
    (``parsed`` False: 0.8.3-0.11.0) or once it has parsed every word (``parsed`` True: 0.5.5-0.8.0)."""
    if not server.entrypoint.endswith(" serve") or not SERVE_MODEL_SINCE <= v < SERVE_MODEL_HOISTED_SINCE:
        return None
    given = [o for o in server.options if o.name == "model"]
    if not given or parsed != (v < SERVE_MODEL_PRE_PARSE_SINCE):
        return None
    words = " ".join(shlex.quote(t.value) for t in given[-1].tokens)
    tag = given[-1].value
    if not parsed:
        if not any(t.value == "--model" for o in server.options for t in o.tokens):
            return None  # `--model=M` is no word `--model`: the parser takes it (and serve uses it)
        return Refused(words, f"ValueError: {_MODEL_WORDS} or in a config file {_MODEL_FLAG_WORDS}",
                       f"name the model as vllm serve's first argument (vllm serve {tag} ...) or write --model={tag}",
                       exit_code=1)
    if server.placeholder(given[-1].tokens) or tag == _DEFAULT_MODEL:
        return None
    return Refused(words, f"ValueError: {_MODEL_WORDS} {_MODEL_FLAG_WORDS}",
                   f"name the model as vllm serve's first argument (vllm serve {tag} ...) and drop --model",
                   exit_code=1)


#: ``ModelConfig.model``, the model vLLM loads when ``--model`` is not given: "facebook/opt-125m" to 0.9.2
#: (config.py@0.9.2 l.233), "Qwen/Qwen3-0.6B" from 0.10.0 (config.py@0.10.0 l.231, config/model.py@0.34.0 l.161).
DEFAULT_MODEL_QWEN_SINCE: Version = (0, 10, 0)


def default_model(v: Version) -> str:
    """The model vLLM ``v`` serves when argv names none (``ModelConfig.model``)."""
    return "Qwen/Qwen3-0.6B" if v >= DEFAULT_MODEL_QWEN_SINCE else _DEFAULT_MODEL


def ignored_model_tag(server: ServerCommand, v: Version) -> str | None:
    """The positional the OpenAI api_server module parses and then ignores, or None: from 0.10.0 its parser takes an
    optional ``model_tag`` (``make_arg_parser``), but only ``vllm serve`` copies it to ``args.model``
    (entrypoints/cli/serve.py@0.10.0 l.42; api_server.py's ``__main__`` parses and runs, every release read to 0.34.0,
    whose module hands over to launchers/api_server/entry.py ``main``), so without ``--model`` vLLM loads its default
    model (``default_model``)."""
    if "openai.api_server" not in server.entrypoint or v < API_SERVER_MODEL_TAG_SINCE or not server.positionals:
        return None
    if any(o.name == "model" for o in server.options) or server.placeholder(server.positionals[:1]):
        return None
    return server.positionals[0].value


def missing_model_tag(server: ServerCommand, v: Version) -> Refused | None:
    """argparse's refusal of ``vllm serve`` without a model tag where it is required (before 0.8.3), or None; not
    judged when a word could be the tag (a placeholder, a word after an option the release lacks)."""
    if not server.entrypoint.endswith(" serve") or v >= MODEL_TAG_OPTIONAL_SINCE or server.positionals:
        return None
    tokens = [t for o in server.options for t in o.tokens]
    if server.placeholder(tokens) or server.hidden or any(o.flag.kind is Kind.UNKNOWN and o.values
                                                          for o in server.options):
        return None
    return Refused("vllm serve without a model tag", "the following arguments are required: model_tag",
                   "name the model as vllm serve's first argument (usage: vllm serve <model_tag> [options])")


def _strays(server: ServerCommand, v: Version) -> list[str]:
    """Positionals beyond what the parser takes, when all are known (a variable's expansion is not known here)."""
    words = [t.value for t in server.positionals]
    if server.placeholder(server.positionals):
        return []
    hoisted = model_hoisted(server.entrypoint, (t.value for t in server.words), v)  # --model is the tag
    takes = 0 if ("api_server" in server.entrypoint and v < API_SERVER_MODEL_TAG_SINCE) or hoisted else 1
    return words[takes:]
