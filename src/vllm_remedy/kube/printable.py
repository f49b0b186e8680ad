"""Text from a manifest (or a cluster) made safe to print on one output line (here, below every layer that prints).

Why: a flag value, env value or annotation is free text. Printed raw, a newline in ``--served-model-name
"x\\nfake"`` became an output line of its own (``[host] fake``), so a manifest could forge a "Success" or a
prediction line; a carriage return or an escape sequence can overwrite or recolour a line on a terminal (pyinfra's
echo strips colour codes only when output is not a terminal). Every such character is written as its Python escape
(``\\n``, ``\\r``, ``\\x1b``, ``\\u2028``), as the responder's log lines already are.
"""

from __future__ import annotations


def escaped(text: str, *, newlines: bool = True) -> str:
    """``text`` with every unprintable character (C0 and C1 controls, DEL, line and paragraph separators, format
    characters such as bidi overrides) escaped; a tab is kept. ``newlines=False`` keeps ``\\n`` for a block whose
    lines the caller splits on purpose (a unified diff)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\t" or (c == "\n" and not newlines) else repr(c)[1:-1]
                   for c in text)
