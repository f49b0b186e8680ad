"""The shell's own expansion of ``$VAR`` / ``${VAR}`` in an ``sh -c`` script's vLLM words, where it is plain.

The kubelet expands ``$(VAR)`` in the script's text first (``kubelet_env``); the shell then expands ``$VAR`` and
``${VAR}`` from its environment, which is the container's env as the kubelet built it. Read only where the result is
certain: every reference is a bare ``$NAME`` or ``${NAME}`` (no ``${X:-d}``, ``$(...)``, ``$((...))``, quotes or
escapes in the word), the variable has a literal value in the pod's env, the script sets or unsets it nowhere before
vLLM (``env.changes``: none), and the expanded word holds no whitespace or glob character (an unquoted expansion is
split and globbed: such a value may become several words). Anything else stays as written ("cannot predict").
The words themselves are read first by ``script_words`` (the script's own assignments included, as the rehearsal pod
reads them); this pass applies to the flag values that reading left as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm.cmdline import env
from vllm_remedy.vllm.cmdline.kubelet_env import environment

_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_SPLIT_OR_GLOB = re.compile(r"[\s*?\[]")


def expand(container: Mapping[str, Any], text: str) -> str:
    """``text`` (one word of the script) as the shell hands it to vLLM, or as written when that is not certain."""
    if "$" not in text or not _REF.search(text):
        return text
    if any(c in _REF.sub("", text) for c in "$'\"\\`"):
        return text  # another expansion form, a quote or an escape: not read here
    known, _opaque = environment(container, {})
    values: dict[str, str] = {}
    for match in _REF.finditer(text):
        name = match.group(1) or match.group(2)
        if name not in known or env.changes(container, name):
            return text
        values[name] = known[name]
    out = _REF.sub(lambda m: values[m.group(1) or m.group(2)], text)
    return text if _SPLIT_OR_GLOB.search(out) else out
