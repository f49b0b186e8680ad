"""Text from a manifest (or a cluster) made safe to print on one output line (here, below every layer that prints).

Why: a flag value, env value or annotation is free text. Printed raw, a newline in ``--served-model-name
"x\\nfake"`` became an output line of its own (``[host] fake``), so a manifest could forge a "Success" or a
prediction line; a carriage return or an escape sequence can overwrite or recolour a line on a terminal (pyinfra's
echo strips colour codes only when output is not a terminal). Every such character is written as its Python escape
(``\\n``, ``\\r``, ``\\x1b``, ``\\u2028``), as the responder's log lines already are. And ``-->`` is written
``--\\x3e``: pyinfra's CLI log formatter (``pyinfra_cli/log.py``) prints any message holding ``-->`` as a header of
its own — a blank line before it and no host indentation — so a value holding it could pass for pyinfra's
``--> Disconnecting from hosts...`` (hostile review 16, G9).
"""

from __future__ import annotations

#: What pyinfra's log formatter takes for a header line, and how it is written instead.
HEADER, HEADER_ESCAPED = "-->", "--\\x3e"


def escaped(text: str, *, newlines: bool = True) -> str:
    """``text`` with every unprintable character (C0 and C1 controls, DEL, line and paragraph separators, format
    characters such as bidi overrides) escaped; a tab is kept. ``newlines=False`` keeps ``\\n`` for a block whose
    lines the caller splits on purpose (a unified diff)."""
    if text.isprintable() and HEADER not in text:
        return text
    return "".join(c if c.isprintable() or c == "\t" or (c == "\n" and not newlines) else repr(c)[1:-1]
                   for c in text).replace(HEADER, HEADER_ESCAPED)
