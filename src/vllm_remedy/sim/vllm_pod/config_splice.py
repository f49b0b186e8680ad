"""The rehearsal pod's own reading of ``vllm serve ... --config FILE``: ``FlexibleArgumentParser.parse_args`` splices
the YAML file's flags into argv before argparse, taking the first word after ``serve`` as the model
(``_pull_args_from_config``, read per wheel):

* 0.6.3-0.8.0: ``--config`` as that word raises ``ValueError: No model_tag specified! ...``; otherwise the file's
  ``--key value`` words go right after it (utils.py@0.7.3 l.1245-1252), so a first option that waits for its value
  gets ``--key`` instead and argparse refuses it (``expected one argument``, exit 2);
* 0.8.3-0.34.0: a first word starting with ``-`` and no ``--model`` word from the file raise ``ValueError: No model
  specified! ...`` (utils.py@0.8.3 l.1346, utils/argparse_utils.py@0.34.0 l.579); from 0.11.1 ``--model M`` is moved
  to the front first;
* the OpenAI api_server module, 0.6.0-0.10.1: the file's flags go after its first word whatever it is, so a first
  option waiting for its value (``--model M``) is refused by argparse the same way (0.10.2 puts them first).

The file is what the kubelet mounts: a ConfigMap volume (``items``, ``subPath``) of the pod's namespace, read from
the cluster's store. A file the pod cannot find is not judged here (its flags stay argv's). The ValueErrors are a
traceback from ``vllm``'s main through ``parse_args`` into ``_pull_args_from_config``, exit 1 (stage ``cli``).
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from vllm_remedy.sim.vllm_pod import argv_options, env
from vllm_remedy.vllm import manifest_flags_file
from vllm_remedy.vllm.cmdline import ServerCommand
from vllm_remedy.vllm.cmdline.flags import Kind
from vllm_remedy.vllm.cmdline.parse import Token
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, version_from_image

Version = tuple[int, int, int]
Frame = tuple[str, int, str, str]
TAG_CHECK_SINCE: Version = (0, 6, 3)
MODEL_CHECK_SINCE: Version = (0, 8, 3)
HOISTED_SINCE: Version = (0, 11, 1)
MODULE_SINCE: Version = (0, 6, 0)  # utils.py@0.6.0 l.1168: ``[args[0]] + config_args + ...`` for any program
MODULE_FIXED_SINCE: Version = (0, 10, 2)  # an option first: the file's flags go before it (utils/__init__.py@0.10.2)
NO_MODEL_TAG = "ValueError: No model_tag specified! Please check your command-line arguments."
NO_MODEL = ("ValueError: No model specified! Please specify model either as a positional argument or in a config "
            "file.")
_SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
_SCRIPT: Frame = ("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())")
#: (cli main's ``args = parser.parse_args()`` line, the parser's file, its ``_pull_args_from_config(args)`` call line,
#: the ``raise ValueError(`` line) per release read; a release between two read ones takes the older one's
_LINES: dict[Version, tuple[int, str, int, int]] = {
    (0, 6, 3): (189, "utils.py", 1150, 1223), (0, 6, 6): (195, "utils.py", 1134, 1210),
    (0, 7, 2): (198, "utils.py", 1200, 1276),
    (0, 7, 3): (68, "utils.py", 1171, 1247), (0, 8, 0): (70, "utils.py", 1180, 1269),
    (0, 8, 3): (46, "utils.py", 1255, 1347), (0, 8, 5): (48, "utils.py", 1349, 1440),
    (0, 9, 0): (51, "utils.py", 1410, 1546), (0, 9, 2): (60, "utils/__init__.py", 1484, 1665),
    (0, 10, 0): (49, "utils/__init__.py", 1713, 1894), (0, 10, 1): (49, "utils/__init__.py", 1785, 1966),
    (0, 10, 2): (49, "utils/__init__.py", 1817, 2001), (0, 11, 0): (49, "utils/__init__.py", 1867, 2055),
    (0, 12, 0): (68, "utils/argparse_utils.py", 224, 436), (0, 13, 0): (68, "utils/argparse_utils.py", 224, 424),
    (0, 14, 0): (68, "utils/argparse_utils.py", 224, 423), (0, 19, 0): (70, "utils/argparse_utils.py", 233, 432),
    (0, 20, 0): (87, "utils/argparse_utils.py", 299, 503), (0, 24, 0): (90, "utils/argparse_utils.py", 299, 503),
    (0, 28, 0): (92, "utils/argparse_utils.py", 299, 503), (0, 30, 0): (101, "utils/argparse_utils.py", 318, 522),
    (0, 34, 0): (110, "utils/argparse_utils.py", 372, 580),
}


def file_of(words: Sequence[str], container: Mapping[str, Any], pod: Mapping[str, Any], store: Any
            ) -> Mapping[str, Any] | None:
    """The YAML mapping at ``--config``'s path as the container sees it (a mounted ConfigMap key), or None."""
    if "--config" not in words or words.index("--config") + 1 >= len(words):
        return None
    path = posixpath.normpath(words[words.index("--config") + 1])
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    volumes = {str(v.get("name")): v for v in (pod.get("spec") or {}).get("volumes") or [] if isinstance(v, Mapping)}
    for mount in container.get("volumeMounts") or []:
        source = (volumes.get(str(mount.get("name"))) or {}).get("configMap") if isinstance(mount, Mapping) else None
        if not isinstance(source, Mapping):
            continue
        at, sub = posixpath.normpath(str(mount.get("mountPath") or "/")), str(mount.get("subPath") or "")
        inside = (sub if path == at else None) if sub else (path[len(at) + 1:] if path.startswith(at + "/") else None)
        if inside is None:
            continue
        items = source.get("items") or []
        key = next((str(i.get("key")) for i in items if str(i.get("path")) == inside), None) if items else inside
        text = env.config_map_data(store, namespace, str(source.get("name"))).get(key or "")
        if text is None:
            continue
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
        return loaded if isinstance(loaded, Mapping) else None
    return None


def read_into(cmd: ServerCommand, config: Mapping[str, Any] | None) -> ServerCommand:
    """``cmd`` with the file it read and the file's flags under argv's: the splice puts them before argv's own words,
    and argparse keeps the last occurrence ("cli > config > defaults"). ``load_config_file``'s words: ``--key``
    (argparse folds ``_`` to ``-``), a true boolean bare, a false one left out, a list as one flag's values, a mapping
    as JSON, anything else ``--key str(value)`` (utils/argparse_utils.py@0.34.0 l.653-671): a switch given a string
    (``"true"``) or a number leaves that word over (``manifest_flags_file.left_over``), a stray positional."""
    if config is None:
        return cmd
    flags: dict[str, str] = {}
    for key, value in config.items():
        name = str(key).replace("_", "-")
        if value is False or value is None or value == []:
            continue
        flags[name] = ("true" if value is True else " ".join(map(str, value)) if isinstance(value, list)
                       else json.dumps(value) if isinstance(value, Mapping) else str(value))
    model = flags.pop("model", None)  # a model tag wins over the file's --model (serve copies the tag to args.model)
    # a non-boolean value on a switch is a word argparse leaves over ("unrecognized arguments", as in argv)
    v = parse_version(version_from_image(cmd.image) or "") or NEWEST_RELEASE
    strays = [Token(word, manifest_flags_file.CONFIG_FIELD, i)
              for i, word in enumerate(manifest_flags_file.left_over(config, v))]
    return dataclasses.replace(cmd, config_file=config, flags={**flags, **cmd.flags}, model=cmd.model or model,
                               positionals=[*cmd.positionals, *strays])


def refusal(cmd: ServerCommand, release: Version) -> tuple[str, tuple[Frame, ...]] | str | None:
    """``before_parsing`` for the pod's command: its words, the file it read (``ServerCommand.config_file``) and
    whether its first word is an option waiting for the next word."""
    module = "openai.api_server" in cmd.entrypoint
    if not (module or cmd.entrypoint.endswith(" serve") or cmd.entrypoint == "image default"):
        return None  # another parser (the demo api_server, a script): not read
    first = next((o for o in cmd.options if cmd.words and o.tokens and o.tokens[0] is cmd.words[0]), None)
    waits = (argv_options.names(first.flag.name, release) if first is not None and first.flag.attached is None
             and first.flag.kind in (Kind.VALUE, Kind.MULTI) else None)
    return before_parsing([t.value for t in cmd.words], cmd.config_file, release, waits, module=module)


def before_parsing(words: Sequence[str], config: Mapping[str, Any] | None, version: Version,
                   waits_for_value: str | None, module: bool = False) -> tuple[str, tuple[Frame, ...]] | str | None:
    """The ValueError (text, frames) the splice raises, argparse's message (a str) for a first option left without its
    value (``waits_for_value``: that option's names as argparse prints them, when the first word is an option that
    takes the next word), or None."""
    if module:  # the api_server module: the file's flags after its first word whatever it is, to 0.10.1
        if "--config" not in words or not MODULE_SINCE <= version < MODULE_FIXED_SINCE or words[0] == "--config":
            return None
        return f"argument {waits_for_value}: expected one argument" if config and waits_for_value else None
    if "--config" not in words or version < TAG_CHECK_SINCE or not words:
        return None
    if version >= HOISTED_SINCE and any(re.match(r"^--model(=.+|$)", w) for w in words):
        return None
    if version < MODEL_CHECK_SINCE:
        if words[0] == "--config":
            return NO_MODEL_TAG, _frames(version)
        if config and waits_for_value:
            return f"argument {waits_for_value}: expected one argument"
        return None
    if config is None or not words[0].startswith("-"):
        return None
    if any(str(k) == "model" and v is not False for k, v in config.items()):
        return None
    return NO_MODEL, _frames(version)


def _frames(version: Version) -> tuple[Frame, ...]:
    main, where, call, line = _LINES[max((v for v in _LINES if v <= version), default=min(_LINES))]
    cli = "scripts.py" if version < (0, 7, 3) else "entrypoints/cli/main.py"  # vllm/scripts.py to 0.7.2
    return (_SCRIPT, (f"{_SITE}/{cli}", main, "main", "args = parser.parse_args()"),
            (f"{_SITE}/{where}", call, "parse_args", "args = self._pull_args_from_config(args)"),
            (f"{_SITE}/{where}", line, "_pull_args_from_config", "raise ValueError("))
