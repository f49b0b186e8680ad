"""``--hf-overrides`` / ``--hf-config-path`` as vLLM receives them: the kubelet's ``$(VAR)`` expansion, ConfigMaps too.

``ServerCommand`` reads argv with the container's own env only. A ``$(J)`` whose variable a ConfigMap checked with
the manifest sets (``env.valueFrom.configMapKeyRef``, ``envFrom``) is expanded by Kubernetes before vLLM parses it,
so ``check`` and ``plan -f`` both size the override it holds, from the same reading. A ``$$(J)`` escape already is the
literal ``$(J)`` (``ServerCommand.literal``): that text is what vLLM parses, never expanded again. A variable whose
value is not known here (a Secret, a ConfigMap not among the manifests) stays a placeholder: "cannot predict".
"""

from __future__ import annotations

from vllm_remedy.vllm import hf_dotted, received_flags
from vllm_remedy.vllm.cmdline.command import ServerCommand
from vllm_remedy.vllm.cmdline.kubelet_env import ConfigMaps
from vllm_remedy.vllm.hf_overrides import FLAG, PATH_FLAG
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version


def received(server: ServerCommand, maps: ConfigMaps | None,
             version: str | None = None) -> tuple[dict[str, str], frozenset[str]]:
    """(``server.flags`` with the two flags' last values as vLLM receives them, the flags among them whose value is
    known text): a value is known when written literally (or made literal by the kubelet's own expansion), or when
    its ``$(VAR)`` references resolve from the container's env and ``maps`` (``received_flags``, the expansion every
    flag gets). Dotted ``--hf-overrides.KEY`` options are folded as release ``version`` folds them (``hf_dotted``:
    from 0.9.0 they replace a plain JSON value)."""
    got = received_flags.received(server, maps)
    flags, known = dict(server.flags), set()
    for name in (FLAG, PATH_FLAG):
        opt = next((o for o in reversed(got.options) if o.name == name), None)
        if name in flags and opt is not None and not got.placeholder(opt.tokens):
            flags[name] = got.flags[name]
            known.add(name)
    v = parse_version(version) or NEWEST_RELEASE
    flags, literal = hf_dotted.received(server, flags, v)  # appended after every argument: replaces a plain value
    if literal is not None:
        known = (known | {FLAG}) if literal else (known - {FLAG})
    return flags, frozenset(known)
