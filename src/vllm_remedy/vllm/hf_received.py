"""``--hf-overrides`` / ``--hf-config-path`` as vLLM receives them: the kubelet's ``$(VAR)`` expansion, ConfigMaps too.

``ServerCommand`` reads argv with the container's own env only. A ``$(J)`` whose variable a ConfigMap checked with
the manifest sets (``env.valueFrom.configMapKeyRef``, ``envFrom``) is expanded by Kubernetes before vLLM parses it,
so ``check`` and ``plan -f`` both size the override it holds, from the same reading. A ``$$(J)`` escape already is the
literal ``$(J)`` (``ServerCommand.literal``): that text is what vLLM parses, never expanded again. A variable whose
value is not known here (a Secret, a ConfigMap not among the manifests) stays a placeholder: "cannot predict".
"""

from __future__ import annotations

from vllm_remedy.vllm.cmdline.command import ServerCommand
from vllm_remedy.vllm.cmdline.kubelet_env import ConfigMaps, expand_arg, unreadable
from vllm_remedy.vllm.hf_overrides import FLAG, PATH_FLAG


def received(server: ServerCommand, maps: ConfigMaps | None) -> tuple[dict[str, str], frozenset[str]]:
    """(``server.flags`` with the two flags' last values as vLLM receives them, the flags among them whose value is
    known text): a value is known when written literally (or made literal by the kubelet's own expansion), or when
    its ``$(VAR)`` references resolve from the container's env and ``maps``."""
    flags, known = dict(server.flags), set()
    for name in (FLAG, PATH_FLAG):
        opt = next((o for o in reversed(server.options) if o.name == name), None)
        if name not in flags or opt is None:
            continue
        text = flags[name]
        if not server.placeholder(opt.tokens):
            known.add(name)
        elif server.script is None and "{{" not in text and unreadable(server.container, text, maps) is None:
            flags[name] = expand_arg(server.container, text, maps)
            known.add(name)
    return flags, frozenset(known)
