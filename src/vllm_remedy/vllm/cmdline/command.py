"""Find the vLLM server in a pod spec by its argv and expose its effective settings.

Containers are recognised by what they run, never by name: real manifests call the server `vllm`, `main`,
`kserve-container`, `inference-server`... and put sidecars and downloaders next to it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import parse, script_words, shell_script, shell_vars
from vllm_remedy.vllm.cmdline.argv_shape import argv_problem
from vllm_remedy.vllm.cmdline.edit import edit_container
from vllm_remedy.vllm.cmdline.kubelet_env import expand_arg, unreadable
from vllm_remedy.vllm.cmdline.parse import Entrypoint, Option, Token
from vllm_remedy.vllm.cmdline.shell_script import UnsafeScriptError
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, version_from_image

# Flags that only vLLM takes: an args-only container (image ENTRYPOINT) with one of these runs vLLM.
_TELLTALE = frozenset({"model", "max-model-len", "gpu-memory-utilization", "tensor-parallel-size",
                       "served-model-name", "max-num-seqs", "kv-cache-dtype", "enforce-eager"})
_IMAGE_DEFAULT = Entrypoint("image default", 0, True)
#: An args-only container of vLLM's own image runs its ENTRYPOINT: ``python3 -m vllm.entrypoints.openai.api_server``
#: to v0.11.0 (Dockerfile@v0.6.6/v0.7.3, docker/Dockerfile@v0.8.5-v0.11.0), ``vllm serve`` from v0.11.1 (read to
#: v0.20.0). The module names the model with --model (a ``model_tag`` from 0.11.0 it does not use): no positional
#: model; the label names the module.
IMAGE_SERVE_SINCE = (0, 11, 1)
_IMAGE_MODULE = Entrypoint("image default (python3 -m vllm.entrypoints.openai.api_server)", 0, False)
_OFFICIAL_IMAGE = re.compile(r"(?:^|/)vllm/vllm-openai(?::|@|$)")


class NoServerError(UserError):
    """No container of this pod spec runs vLLM (callers walking many templates may skip it)."""


class ManifestError(UserError):
    """The container's argv has a shape Kubernetes refuses (``argv_shape.argv_problem``): no pod runs it."""


@dataclass
class ServerCommand:
    """The vLLM server of one container: what it runs and its effective flags, editable in place of form.

    ``flags`` maps canonical dash names (no `--`) to string values; the last occurrence wins like argparse;
    booleans are "true"/"false"; JSON and `$(VAR)`/`{{ .X }}` placeholders are kept verbatim. The model is
    in ``model`` (positional or `--model`), not in ``flags``. ``hidden`` holds the bare arguments taken from a variable
    this tool cannot read (`$(EXTRA)` from a Secret or an unchecked ConfigMap in args, `$EXTRA` in a script) as
    written: they can carry flags this parse never sees, so whoever sizes the start (``memory.unmodelled``) says it
    cannot, while ``flags`` stays what vLLM's parser is shown. ``literal`` holds the exec-form words read through the
    kubelet's expansion (``kubelet_env``): their value is what vLLM receives, so a ``$`` left in one (an undefined
    ``$(X)``, a ``$$(X)`` escape) is text vLLM parses like any other, never a placeholder (``placeholder``).
    """

    container_name: str
    image: str
    entrypoint: str
    model: str | None
    flags: dict[str, str]
    container: dict[str, Any] = field(repr=False)
    options: list[Option] = field(repr=False, default_factory=list)
    model_token: Token | None = field(repr=False, default=None)
    anchor: Token | None = field(repr=False, default=None)
    script: tuple[str, int] | None = field(repr=False, default=None)  # (field, index) of an `sh -c` script
    end_of_options: Token | None = field(repr=False, default=None)  # a `--`: new flags must go before it
    hidden: tuple[str, ...] = ()
    positionals: list[Token] = field(repr=False, default_factory=list)  # every bare word, a model tag included
    literal: frozenset[Token] = field(repr=False, default=frozenset())
    # every word after the entrypoint, in argv order: vLLM's ``--config`` splice reads the first one (``refused``)
    words: tuple[Token, ...] = field(repr=False, default=())
    # the ``--config`` file's YAML mapping once read (``manifest_flags_file.merged``); None while it is not
    config_file: Mapping[str, Any] | None = field(repr=False, default=None)

    def placeholder(self, tokens: Iterable[Token]) -> bool:
        """Whether any of these words holds a value this tool cannot know (a variable it cannot read, a shell's
        ``$X``, a template's ``{{ .X }}``): then what vLLM makes of them is not judged."""
        return any(("$" in t.value or "{{" in t.value) and t not in self.literal for t in tokens)

    def render(self) -> dict[str, Any]:
        """The container as parsed (a deep copy): rendering without edits is byte-identical."""
        return copy.deepcopy(self.container)

    def overridden(self) -> list[tuple[str, str]]:
        """(flag, value) of every occurrence a later one of the same flag overrides, in argv order.

        ``flags`` keeps the last, as argparse's result does; but argparse converts each occurrence with the flag's
        type as it reads it, so ``--max-model-len 16Ki --max-model-len 8192`` stops vLLM at the first. Callers
        judge these values with the release's types too."""
        last = {opt.name: i for i, opt in enumerate(self.options)}
        return [(opt.name, opt.value) for i, opt in enumerate(self.options)
                if opt.name != "model" and last[opt.name] != i]

    def edit(self, set: Mapping[str, str] | None = None, unset: Iterable[str] = (), drop: Iterable[str] = ()
             ) -> dict[str, Any]:
        """A new container dict with flags set/unset (and stray bare words ``drop``ped), touching only the tokens
        that must change."""
        return edit_container(self, dict(set or {}), list(unset), frozenset(drop))


def _strings(value: Any) -> list[str] | None:
    if value is None:
        return []
    if not isinstance(value, list):
        return None
    return ["" if v is None else v if isinstance(v, str) else str(v) for v in value]  # null: "" (argv_shape)


def _analyse(container: Mapping[str, Any]) -> ServerCommand | None:
    """ServerCommand for a container that runs vLLM from argv, else None."""
    command, args = _strings(container.get("command")), _strings(container.get("args"))
    if command is None or args is None:  # a string, not a list: vLLM's if it names vLLM, but never run
        text = " ".join(str(container.get(k) or "") for k in ("image", "command", "args")).lower()
        if "vllm" in text or any(f"--{flag}" in text for flag in _TELLTALE):
            raise ManifestError(f"container {container.get('name', '?')}: {argv_problem(container)}")
        return None
    tokens = [Token(v, "command", i) for i, v in enumerate(command)] + [Token(v, "args", i) for i, v in enumerate(args)]
    values = [t.value for t in tokens]
    script: tuple[str, int] | None = None
    entry: Entrypoint | None = None
    rest: list[Token] = []
    anchor: Token | None = None
    literal: frozenset[Token] = frozenset()
    idx = shell_script.script_index(values)
    if idx is not None:
        try:
            found = shell_script.vllm_statement(tokens, idx)
        except UnsafeScriptError as exc:
            raise UnsafeScriptError(f"container {container.get('name', '?')}: its shell script runs vLLM in a "
                                    f"form this tool cannot read or edit reliably ({exc}); edit it by hand") from None
        if found:
            entry, rest, anchor = found
            script = (tokens[idx].field, tokens[idx].index)
            rest, literal = script_words.received(container, tokens[idx], rest)  # `MODEL=x` then "$MODEL": x
    if entry is None:
        hit = parse.entrypoint(values)
        if hit:
            offset, entry = hit
            rest = tokens[offset + entry.length :]
            anchor = tokens[-1]
    if entry is None and not command and args:
        options, _ = parse.parse_options(tokens)
        image = str(container.get("image", "")).lower()
        if "vllm" in image or any(o.name in _TELLTALE for o in options):
            entry, rest, anchor = image_default(str(container.get("image", ""))), tokens, tokens[-1]
    if entry is None:
        return None
    if (refused := argv_problem(container)) is not None:  # `- 8192` unquoted: the API server refuses the pod
        raise ManifestError(f"container {container.get('name', '?')}: {refused}")
    if script is None:
        rest, literal = _as_received(container, rest)
        anchor = next((t for t in literal if anchor is not None and (t.field, t.index) == (anchor.field, anchor.index)),
                      anchor)  # the last word, as received: an edit keys its changes on one token per item
    release = parse_version(version_from_image(str(container.get("image", ""))))
    options, positionals = parse.parse_options(rest, release)
    model_token = positionals[0] if entry.positional_model and positionals else None
    if model_token is not None and parse.model_hoisted(entry.label, (t.value for t in rest), release or NEWEST_RELEASE):
        model_token = None  # --model is the tag, the bare words are left over (``refused``)
    if (model_token is not None and any(o.name == "model" for o in options) and model_token not in literal
            and unreadable(container, model_token.value)):
        model_token = None  # it may expand to a flag or a model tag: --model stands, the word is a hidden argument
    flags: dict[str, str] = {}
    model = model_token.value if model_token else None
    for opt in options:
        if opt.name == "model":
            model = model if model_token else opt.value
        else:
            flags[opt.name] = opt.value
    if script is not None:  # the kubelet expands `$(X)` in the script's text before its shell reads it, then the
        # shell expands a plain `$X` / `${X}` from the pod's env (``shell_vars``: only where the result is certain)
        flags = {k: shell_vars.expand(container, expand_arg(container, v)) for k, v in flags.items()}
    # A bare argument taken from a variable this tool cannot read (`$(EXTRA)` from a Secret in args, `$EXTRA` in a
    # script) can carry flags vLLM then reads (Kubernetes expands the first, the shell expands and splits the second);
    # not followed: the estimate is unknown. A word the kubelet's expansion made literal is vLLM's word, not hidden.
    named = any(o.name == "model" for o in options)  # then a leading positional is no model tag either
    hidden = tuple(t.value for t in positionals if "$" in t.value and t not in literal
                   and (t is not model_token or named))
    return ServerCommand(
        container_name=str(container.get("name", "")), image=str(container.get("image", "")),
        entrypoint=entry.label, model=model, flags=flags, container=copy.deepcopy(dict(container)),
        options=options, model_token=model_token, anchor=anchor, script=script,
        end_of_options=next((t for t in rest if t.value == "--"), None), hidden=hidden, positionals=positionals,
        literal=literal, words=tuple(rest),
    )


def image_default(image: str) -> Entrypoint:
    """The program an args-only container runs: vLLM's own image before ``IMAGE_SERVE_SINCE`` runs the OpenAI
    api_server module; a newer one, an unknown tag (the newest release) or any other image is read as ``vllm serve``."""
    release = parse_version(version_from_image(image))
    if _OFFICIAL_IMAGE.search(image.strip()) and release is not None and release < IMAGE_SERVE_SINCE:
        return _IMAGE_MODULE
    return _IMAGE_DEFAULT


def _as_received(container: Mapping[str, Any], rest: list[Token]) -> tuple[list[Token], frozenset[Token]]:
    """``rest`` as vLLM receives it, and the words read so: the kubelet expands each exec-form `command`/`args` item
    (``kubelet_env.expand``) before vLLM's argparse sees it, one word each, so `$(KVF)` holding
    `--kv-cache-memory-bytes=4G` is that option, an undefined `$(X)` the literal `$(X)` and `$$(X)` the literal
    `$(X)`. Each token keeps its place in the manifest (an edit rewrites it there); a word whose expansion this tool
    cannot read (a Secret, an unchecked ConfigMap) stays as written, a placeholder (``ServerCommand.hidden``)."""
    out: list[Token] = []
    literal: set[Token] = set()
    for t in rest:
        if "$" not in t.value or unreadable(container, t.value) is not None:
            out.append(t)
            continue
        received = Token(expand_arg(container, t.value), t.field, t.index, t.span, t.gap_start, t.raw)
        out.append(received)
        literal.add(received)
    return out, frozenset(literal)


def _vllm_without_argv(container: Mapping[str, Any]) -> bool:
    """A container that looks like vLLM but whose settings are not in argv (baked CMD, env only)."""
    if container.get("command") or container.get("args"):
        return False
    env_names = [str(e.get("name", "")) for e in container.get("env") or [] if isinstance(e, Mapping)]
    return "vllm" in str(container.get("image", "")).lower() or any(re.match(r"^VLLM_", n) for n in env_names)


def _containers(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for key in ("containers", "initContainers"):
        items = pod_spec.get(key) or []
        if isinstance(items, list):
            out.extend(c for c in items if isinstance(c, Mapping))
    return out


def find_server(pod_spec: Mapping[str, Any], container: str | None = None) -> ServerCommand:
    """The vLLM server of a pod spec, found by argv across containers and initContainers.

    Raises UserError when there is none, when several run vLLM and ``container`` is not given, or when
    vLLM's settings are not in argv (then they cannot be patched via argv).
    """
    everything = _containers(pod_spec)
    names = [str(c.get("name", "?")) for c in everything]
    if container is not None:
        chosen = [c for c in everything if c.get("name") == container]
        if not chosen:
            raise NoServerError(f"container {container}: not in this pod spec (containers: {', '.join(names)})")
        found = _analyse(chosen[0])
        if found:
            return found
        if _vllm_without_argv(chosen[0]):
            raise UserError(_not_in_argv(container))
        raise NoServerError(f"container {container}: does not run a vLLM server (no vllm serve / "
                            "python -m vllm.entrypoints... in command/args)")
    servers = [s for s in (_analyse(c) for c in everything) if s is not None]
    if len(servers) == 1:
        return servers[0]
    if len(servers) > 1:
        listed = ", ".join(s.container_name for s in servers)
        raise UserError(f"several containers run vLLM ({listed}); choose one with --container")
    hidden = [str(c.get("name", "?")) for c in everything if _vllm_without_argv(c)]
    if hidden:
        raise UserError(_not_in_argv(hidden[0]))
    raise NoServerError(f"no container runs a vLLM server (containers: {', '.join(names) or 'none'}; looked for "
                        "vllm serve / python -m vllm.entrypoints... in command/args)")


def _not_in_argv(name: str) -> str:
    return (f"container {name}: vLLM settings are not in argv (image default CMD / env only); "
            "not patchable via argv")
