"""Every flag of a manifest's argv as vLLM receives it once the ConfigMaps checked with it are known.

The kubelet expands ``$(VAR)`` in every ``command``/``args`` item from the container's env before the process starts
(``kubelet_env``), whatever flag the item belongs to. ``ServerCommand`` is parsed with the container's own env only,
so a variable set from a ConfigMap (``env.valueFrom.configMapKeyRef``, ``envFrom.configMapRef``) stays a placeholder
there; with the ConfigMaps given with ``-f`` (``pod_env.config_maps``) its value is known, so ``--max-model-len
$(MAX_LEN)`` is the length the ConfigMap holds, for the checks and the estimate alike. Each item is expanded whole and
stays one word, so only a flag's value is read this way: a flag word or a bare argument holding a variable may expand
to other options (``ServerCommand.hidden``) and stays as written. A ``sh -c`` script is the shell's (``shell_vars``).
"""

from __future__ import annotations

import dataclasses

from vllm_remedy.vllm.cmdline.command import ServerCommand
from vllm_remedy.vllm.cmdline.kubelet_env import ConfigMaps, expand_arg, unreadable
from vllm_remedy.vllm.cmdline.parse import Option, Token


def _token(server: ServerCommand, token: Token, maps: ConfigMaps) -> Token:
    """The word as received, at its place in the manifest (an edit rewrites it there), as ``command`` keeps one."""
    return dataclasses.replace(token, value=expand_arg(server.container, token.value, maps))


def _option(server: ServerCommand, opt: Option, maps: ConfigMaps) -> Option | None:
    """``opt`` as received, or None when it is not a placeholder the ConfigMaps resolve (or its flag word has one)."""
    if (not server.placeholder(opt.tokens) or "$" in opt.flag.spelled or any("{{" in t.value for t in opt.tokens)
            or any(unreadable(server.container, t.value, maps) is not None for t in opt.tokens)):
        return None
    attached = opt.flag.attached
    flag = dataclasses.replace(opt.flag, attached=None if attached is None
                               else expand_arg(server.container, attached, maps))
    return Option(flag, [_token(server, t, maps) for t in opt.tokens],
                  [expand_arg(server.container, v, maps) for v in opt.values])


def received(server: ServerCommand, maps: ConfigMaps | None) -> ServerCommand:
    """``server`` with every option whose ``$(VAR)`` the container's env and ``maps`` resolve as the process receives
    it (each occurrence: argparse converts each; ``flags`` keeps the last), those words then literal; the model too
    (``--model`` or the positional tag). Unchanged when nothing is resolved."""
    if not maps or server.script is not None:
        return server
    options, literal, changed = list(server.options), set(server.literal), False
    model, model_token = server.model, server.model_token
    for i, opt in enumerate(options):
        if (got := _option(server, opt, maps)) is not None:
            options[i], changed = got, True
            literal.update(got.tokens)
    flags = dict(server.flags)
    for i, opt in enumerate(options):  # argparse keeps the last occurrence
        if opt.name != "model":
            flags[opt.name] = opt.value
        elif server.model == server.options[i].value:  # else a positional model tag decides (``command``)
            model = opt.value
    token = server.model_token
    if token is not None and server.model == token.value and server.placeholder([token]) \
            and unreadable(server.container, token.value, maps) is None:
        received_token = _token(server, token, maps)
        if not received_token.value.startswith("-"):  # a word starting with "-" would be read as an option
            model, model_token, changed = received_token.value, received_token, True
            literal.add(received_token)
    if not changed:
        return server
    return dataclasses.replace(server, options=options, flags=flags, model=model, model_token=model_token,
                               literal=frozenset(literal))
