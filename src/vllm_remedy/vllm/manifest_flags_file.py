"""vLLM's YAML flags file (``vllm serve MODEL --config /etc/vllm/config.yaml``), read where the manifests carry it.

vLLM's ``FlexibleArgumentParser`` replaces ``--config FILE`` by the file's keys as flags, inserted right after the
model, so every flag of the command line wins over the file's and the file's over the defaults ("cli > config >
defaults", ``_pull_args_from_config`` / ``load_config_file``, utils/argparse_utils.py): a flat YAML mapping, keys
with dashes or underscores, ``true`` a bare boolean flag, ``false`` left out, lists as the values of one flag. The
file must end in .yaml or .yml. Only the word ``--config`` splices (``--config=FILE`` is stored and ignored:
``ignored``), and where the file goes depends on the model's place (``cmdline.config_splice``).

A flag in a file this tool cannot read may be any memory flag (the length, the utilization, the TP size): the
start cannot be predicted (``unread``) unless the file is supplied — a ConfigMap among the manifests checked, mounted
into the container at that path (``merged``), read as the project reads ConfigMaps for env (``pod_env.config_maps``:
same namespace, by name).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import ServerCommand, config_splice
from vllm_remedy.vllm.cmdline.booleans import store_boolean
from vllm_remedy.vllm.cmdline.flags import Kind, kind_of
from vllm_remedy.vllm.cmdline.parse import Token
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, version_from_image
from vllm_remedy.yamlfile import load_text

FLAG = "config"


def unread(flags: Mapping[str, str]) -> str | None:
    """Why the flags cannot be known while ``--config`` names a file not read here, or None without one."""
    path = flags.get(FLAG)
    if path is None:
        return None
    return (f"cannot predict --config {path}: vLLM reads flags from that YAML file (the command line's win over it), "
            "and this tool cannot read it; check it with the ConfigMap mounted there, or write the flags in argv")


def _inside(path: str, at: str, sub: str) -> str | None:
    """Where ``path`` lies inside a volume mounted at ``at`` (a ``subPath`` mount: that one file), or None."""
    if sub:
        return sub if path == at else None
    return path[len(at) + 1:] if path.startswith(at + "/") else None


def file_text(container: Mapping[str, Any], spec: Mapping[str, Any], path: str,
               maps: Mapping[str, Mapping[str, str]]) -> str | None:
    """The text of the file at ``path`` inside the container, when a volume mount puts a ConfigMap's key there."""
    volumes = {str(v.get("name")): v for v in spec.get("volumes") or [] if isinstance(v, Mapping)}
    for mount in container.get("volumeMounts") or []:
        if not isinstance(mount, Mapping):
            continue
        at = str(mount.get("mountPath") or "").rstrip("/")
        sub = str(mount.get("subPath") or "")
        inside = _inside(path, at, sub)
        source = (volumes.get(str(mount.get("name"))) or {}).get("configMap")
        if inside is None or not isinstance(source, Mapping) or str(source.get("name")) not in maps:
            continue
        items = source.get("items")
        if isinstance(items, list) and items:  # only the listed keys, each at its own path
            key = next((str(i.get("key")) for i in items if isinstance(i, Mapping) and str(i.get("path")) == inside),
                       None)
        else:
            key = inside
        data = maps[str(source.get("name"))]
        if key is not None and key in data:
            return data[key]
    return None


def flags_of(text: str, path: str) -> dict[str, str]:
    """The file's flags as ``ServerCommand.flags`` spells them (dash names, "true" for a bare boolean)."""
    if path.rsplit(".", 1)[-1] not in ("yaml", "yml"):
        raise UserError(f"--config {path}: vLLM takes a .yaml or .yml file only")
    data = load_text(text, f"--config {path}")
    if not isinstance(data, Mapping):
        raise UserError(f"--config {path}: expected a mapping of flag names to values")
    out: dict[str, str] = {}
    for key, value in data.items():
        name = str(key).lstrip("-").replace("_", "-")
        if value is False or value is None:
            continue
        if value is True:
            out[name] = "true"
        elif isinstance(value, list):
            out[name] = " ".join(str(v) for v in value)
        elif isinstance(value, Mapping):
            out[name] = json.dumps(value)
        else:
            out[name] = str(value)
    return out


def merged(server: ServerCommand, spec: Mapping[str, Any],
           maps: Mapping[str, Mapping[str, str]] | None) -> ServerCommand:
    """``server`` with its flags as vLLM sees them once the ``--config`` file is read: the file's under the command
    line's. Unchanged without ``--config`` or when the file is not among ``maps`` (then ``unread`` says why)."""
    path = server.flags.get(FLAG)
    if path is not None and ignored(server):  # argparse's --config option takes it, and nothing reads it
        return dataclasses.replace(server, flags={k: v for k, v in server.flags.items() if k != FLAG})
    if path is None or not maps:
        return server
    text = file_text(server.container, spec, path, maps)
    if text is None:
        return server
    from_file = flags_of(text, path)
    file_model = from_file.pop("model", None)  # the model is ``ServerCommand.model``, never a flag
    flags = {**from_file, **{k: v for k, v in server.flags.items() if k != FLAG}}
    config = load_text(text, f"--config {path}")
    v = parse_version(version_from_image(server.image) or "") or NEWEST_RELEASE
    # a word the splice hands a switch is a bare word argparse leaves over, as the same word in argv is
    strays = [Token(word, CONFIG_FIELD, i) for i, word in enumerate(left_over(config, v))]
    model = server.model if server.model is not None or not takes_model(server, config, v) else file_model
    return dataclasses.replace(server, flags=flags, config_file=config, model=model,
                               positionals=[*server.positionals, *strays] if strays else server.positionals)


#: ``vllm serve`` takes the model from the file's ``--model`` word when argv names none from 0.8.3
#: (``model_in_config``, utils.py@0.8.3 l.1343-1359, utils/argparse_utils.py@0.34.0 l.569-596; before, the model tag
#: is required); the api_server module reads its ``--model`` option from the file once the splice puts the file's
#: flags first (0.10.2: "No sub command (e.g., api_server entry point)"; before, after its first word).
SERVE_FILE_MODEL_SINCE = (0, 8, 3)
MODULE_FILE_MODEL_SINCE = (0, 10, 2)


def takes_model(server: ServerCommand, config: Mapping[str, Any], v: tuple[int, ...]) -> bool:
    """Whether vLLM ``v`` serves the model the ``--config`` file names (``model: org/name``) for a command whose argv
    names none (argv's model wins over the file's: "cli > config"). Only the key ``model`` itself becomes the
    ``--model`` word vLLM looks for (``config_splice.names_model``)."""
    if server.model is not None or not config_splice.names_model(config):
        return False
    if "openai.api_server" in server.entrypoint:
        return v >= MODULE_FILE_MODEL_SINCE
    return (server.entrypoint.endswith(" serve") or server.entrypoint == "image default") and \
        v >= SERVE_FILE_MODEL_SINCE


#: The ``Token.field`` of a word the ``--config`` file puts into argv: it is in no container field, so no edit of
#: argv can remove it (the file's line is the fix).
CONFIG_FIELD = "--config"
#: From 0.6.4 a YAML boolean is the bare switch (true) or left out (false); 0.6.0-0.6.3 append ``--key str(value)``
#: for every key (utils.py@0.6.3 l.1269-1271), utils.py@0.6.4 tells booleans apart.
BOOLEAN_WORDS_SINCE = (0, 6, 4)


def left_over(config: Mapping[str, Any], v: tuple[int, ...]) -> list[str]:
    """The words vLLM ``v``'s splice gives a switch that takes none, which argparse leaves over (``unrecognized
    arguments``, exit 2): ``load_config_file`` writes only a real YAML boolean as the bare ``--key``, any other value
    as ``--key str(value)`` (utils.py@0.8.5 l.1495-1501, utils/argparse_utils.py@0.34.0 l.653-671), so a boolean
    written as a string (``"true"``, Helm's ``| quote``) or a number follows a ``store_true`` /
    ``BooleanOptionalAction`` switch as a stray word; before :data:`BOOLEAN_WORDS_SINCE` every value is, a YAML
    boolean too (``True``). A release's legacy StoreBoolean takes the word (``booleans``)."""
    out: list[str] = []
    for key, value in config.items():
        name = str(key).lstrip("-").replace("_", "-")
        if value is None or isinstance(value, (list, Mapping)):
            continue
        if isinstance(value, bool) and v >= BOOLEAN_WORDS_SINCE:
            continue
        if kind_of(name) in (Kind.BOOLEAN, Kind.STORE_TRUE) and not store_boolean(name, v):
            out.append(str(value))
    return out


def ignored(server: ServerCommand) -> bool:
    """``--config=FILE`` as one word: ``FlexibleArgumentParser.parse_args`` splices only on the exact word
    ``--config`` (``if "--config" in args``, utils.py@0.6.0 to utils/argparse_utils.py@0.34.0 l.371), and the parser's
    own ``--config`` option (entrypoints/common/cli_args.py@0.34.0 l.469) stores a path nothing reads: vLLM runs on
    argv's flags alone."""
    given = [o for o in server.options if o.name == FLAG]
    return bool(given) and all(o.flag.attached is not None for o in given) and not any(
        t.value == "--config" for t in server.words)
