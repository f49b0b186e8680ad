"""Rewrite container argv lists inside the user's YAML text, leaving every other byte as it was.

A manifest is a reviewed, commented file; re-serialising it (any YAML library) reflows quoting, comments,
indentation and `key : value` spacing, so `args set` output would drown the real change in noise. Instead we
keep the text and splice only the sequence items that change, at the offsets ruamel.yaml's composer gives
each node: a replaced item keeps its quoting style, a new item copies its neighbour's `- ` prefix (block) or
separator (flow), a deleted item takes its line with it. The result is re-parsed and must equal the
intended data; if the preferred styles do not survive that check, the changed items are written
double-quoted, and if even that fails the edit is refused rather than written wrong.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import manifest

_DASH_PREFIX = re.compile(r"^[ \t]*-[ \t]+$")


@dataclass
class _Change:
    """One container field to rewrite: its sequence node and the list it must hold."""

    node: SequenceNode
    values: list[str]


@dataclass
class ManifestText:
    """A YAML stream as text plus its documents; argv edits are spliced into ``text`` on ``render()``.

    ``documents`` are the plain data (same as `manifest.load_documents`); editing them does nothing to the
    text — call ``set_list`` with a container dict taken from them.
    """

    text: str
    source: str
    documents: list[Any] = field(init=False)
    _containers: dict[int, MappingNode] = field(init=False, repr=False)
    _changes: dict[int, _Change] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        pairs = manifest.compose(self.text, self.source)
        self.documents = [data for _node, data in pairs]
        self._containers = {}
        for node, data in pairs:
            self._index(node, data)

    def _index(self, node: Node, data: Any) -> None:
        """Map every container dict (by identity) to its mapping node, walking nodes and data together."""
        if not isinstance(node, MappingNode) or not isinstance(data, dict):
            if isinstance(node, SequenceNode) and isinstance(data, list) and len(node.value) == len(data):
                for child, item in zip(node.value, data, strict=True):
                    self._index(child, item)
            return
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if not isinstance(key, str) or key not in data:
                continue
            value = data[key]
            if (key in ("containers", "initContainers") and isinstance(value, list)
                    and isinstance(value_node, SequenceNode) and len(value_node.value) == len(value)):
                for c_node, c in zip(value_node.value, value, strict=True):
                    if isinstance(c_node, MappingNode) and isinstance(c, dict):
                        self._containers[id(c)] = c_node
            self._index(value_node, value)

    def set_list(self, container: dict[str, Any], key: str, values: list[str | None]) -> None:
        """Make ``container[key]`` (e.g. `args`) hold ``values`` in the text; ``container`` is one of ours. A null
        item (YAML ``~``, kept by an edit of the rest) is the empty string to Kubernetes (``cmdline.argv_shape``), and
        is written so."""
        values = ["" if v is None else v for v in values]
        c_node = self._containers.get(id(container))
        seq = _value_node(c_node, key) if c_node is not None else None
        if not isinstance(seq, SequenceNode):
            raise UserError(f"{self.source}: container {container.get('name', '?')}: {key} is not a plain YAML list "
                            "here (anchor, merge key or missing); cannot edit it in place")
        if container.get(key) == values:
            self._changes.pop(id(seq), None)
            return
        self._changes[id(seq)] = _Change(seq, list(values))
        container[key] = list(values)

    def render(self) -> str:
        """The text with every change spliced in; unchanged input comes back byte for byte."""
        if not self._changes:
            return self.text
        expected = self.documents
        for safe in (False, True):
            edits: list[tuple[int, int, str]] = []
            for change in self._changes.values():
                edits.extend(_splice(self.text, change.node, change.values, safe))
            out = _apply(self.text, edits)
            try:
                if manifest.load_documents(out, self.source) == expected:
                    return out
            except UserError:
                continue
        raise UserError(f"{self.source}: cannot rewrite the argv in place without changing its meaning "
                        "(unusual YAML layout); edit it by hand")


def _value_node(mapping: MappingNode, key: str) -> Node | None:
    for key_node, value_node in mapping.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return value_node
    return None


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """Index just past the line break of the line holding ``index`` (or the end of text)."""
    if index > 0 and text[index - 1] == "\n":  # a block scalar's end mark sits at the next line start
        return index
    k = text.find("\n", index)
    return len(text) if k < 0 else k + 1


def _scalar(value: str, like: ScalarNode | None, siblings: list[Node], flow: bool, safe: bool) -> str:
    """YAML text for a sequence item ``value``: the old item's style, else its siblings' quoting, else plain."""
    if safe:
        return json.dumps(value, ensure_ascii=False)
    style = like.style if like is not None else _common_quote(siblings)
    if style == "'" and "\n" not in value:
        return "'" + value.replace("'", "''") + "'"
    if style == '"' or "\n" in value:
        return json.dumps(value, ensure_ascii=False)
    if value and _loads_as_same_str(value, flow):
        return value
    return json.dumps(value, ensure_ascii=False)


def _loads_as_same_str(candidate: str, flow: bool) -> bool:
    """Does this plain text read back as the same string (not an int, bool, null...) in that context?"""
    doc = f"[{candidate}]" if flow else f"- {candidate}"
    try:
        return manifest.load_documents(doc, "") == [[candidate]]
    except UserError:
        return False


def _common_quote(items: list[Node]) -> str | None:
    """The quoting every quoted sibling shares, so new items match a list written all-quoted."""
    styles = [n.style for n in items if isinstance(n, ScalarNode)]
    if styles and all(s == styles[0] for s in styles) and styles[0] in ("'", '"'):
        return styles[0]
    return None


def _block_scalar(text: str, node: ScalarNode, value: str, nl: str) -> tuple[int, str] | None:
    """(end, replacement) for a `|`/`>` item: a literal block at the old indentation, trailing blanks kept."""
    start, end = node.start_mark.index, node.end_mark.index
    old = text[start:end]
    header_end = old.find("\n")
    content = old[header_end + 1 :] if header_end >= 0 else ""
    first = next((ln for ln in content.splitlines() if ln.strip()), None)
    if first is None or value[:1] in (" ", "\t"):
        return None
    indent = first[: len(first) - len(first.lstrip(" "))]
    if value.endswith("\n\n"):  # needs `|+`; let the quoted fallback carry it
        return None
    chomp = "" if value.endswith("\n") else "-"
    body = value[:-1] if value.endswith("\n") else value
    lines = "".join((indent + ln if ln else "") + nl for ln in body.split("\n"))
    if "+" in old[:header_end]:  # keep-chomping blocks own their trailing blank lines: do not guess
        return None
    header = "|" + chomp  # indentation is explicit in the lines, so no indicator digit is needed
    kept_tail = len(old) - len(old.rstrip(" \t\r\n"))
    cut = _line_end(text, end - kept_tail) if kept_tail else end
    return cut, header + nl + lines


def _splice(text: str, seq: SequenceNode, values: list[str], safe: bool) -> list[tuple[int, int, str]]:
    """Edits turning the items of ``seq`` into ``values``, touching only changed items."""
    items: list[Node] = list(seq.value)
    old = [n.value if isinstance(n, ScalarNode) else None for n in items]
    nl = _newline(text)
    flow = bool(seq.flow_style)
    if flow:
        return _splice_flow(text, seq, items, old, values, safe)
    if not values:
        return _empty_block(text, seq, nl)
    edits: list[tuple[int, int, str]] = []
    prefix = _item_prefix(text, items, seq)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, values, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op in ("replace", "delete"):
            pairs = _pairs(old[i1:i2], values[j1:j2]) if op == "replace" else 0
            for k in range(i1, i2):
                node = items[k]
                if k - i1 < pairs:
                    edits.append(_replace_item(text, node, values[j1 + k - i1], items, False, safe, nl))
                else:
                    begin = _line_start(text, node.start_mark.index)
                    edits.append((begin, _line_end(text, node.end_mark.index), ""))
            j1 += pairs
            if op == "delete" or j1 >= j2:
                continue
            at = _line_end(text, items[i2 - 1].end_mark.index)
        else:  # insert before items[i1] (or after the last)
            at = _line_start(text, items[i1].start_mark.index) if i1 < len(items) else \
                _line_end(text, items[-1].end_mark.index)
        lead = nl if at == len(text) and not text.endswith("\n") else ""
        new_lines = "".join(prefix + _scalar(v, None, items, False, safe) + nl for v in values[j1:j2])
        edits.append((at, at, lead + (new_lines[: -len(nl)] if lead else new_lines)))
    return edits


def _pairs(old: list[str | None], new: list[str]) -> int:
    """How many leading items of a replaced run are the *same slot* with a new value (kept in place, with
    their quoting and trailing comment): a value after an unchanged flag, or the same `--flag=` with a new
    value. The rest is a different flag: its old lines go and new lines are added, comments not reassigned."""
    n = 0
    for a, b in zip(old, new, strict=False):
        if a is None:
            break
        a_opt, b_opt = a.startswith("-"), b.startswith("-")
        same_eq_flag = a_opt and b_opt and "=" in a and a.partition("=")[0] == b.partition("=")[0]
        value_of_kept_flag = not a_opt and not b_opt and n == 0
        if not (same_eq_flag or value_of_kept_flag):
            break
        n += 1
    return n


def _empty_block(text: str, seq: SequenceNode, nl: str) -> list[tuple[int, int, str]]:
    """A block list that must become empty turns into `key: []` (a bare `key:` would read as null)."""
    colon = len(text[: seq.start_mark.index].rstrip(" \t\r\n")) - 1
    if colon < 0 or text[colon] != ":":
        return []  # comments between key and list: leave it to the meaning check to refuse
    return [(colon + 1, _line_end(text, seq.value[-1].end_mark.index), " []" + nl)]


def _replace_item(text: str, node: Node, value: str, siblings: list[Node], flow: bool, safe: bool,
                  nl: str) -> tuple[int, int, str]:
    start, end = node.start_mark.index, node.end_mark.index
    refolded = _refold(text, node, value) if isinstance(node, ScalarNode) and not safe else None
    if refolded is not None:
        return refolded
    if isinstance(node, ScalarNode) and node.style in ("|", ">") and not safe:
        block = _block_scalar(text, node, value, nl)
        if block is not None:
            return start, block[0], block[1]
    if isinstance(node, ScalarNode) and node.style in ("|", ">"):  # keep the line break and blank lines after it
        end = start + len(text[start:end].rstrip(" \t\r\n"))
    like = node if isinstance(node, ScalarNode) and node.style not in ("|", ">") else None
    return start, end, _scalar(value, like, siblings, flow, safe)


def _refold(text: str, node: ScalarNode, value: str) -> tuple[int, int, str] | None:
    """Rewrite a line-folded scalar (`>`, multi-line plain or quoted) keeping its line breaks where the words
    around them are unchanged, so a reviewer sees the edited words, not a reflowed paragraph. None: not
    folded simply (escapes, blank or more-indented lines), the caller writes it afresh."""
    start = node.start_mark.index
    raw = text[start : node.end_mark.index].rstrip(" \t\r\n")
    if node.style in ('"', "'"):
        lo, hi = 1, len(raw) - 1
    elif node.style in (">", None):
        lo, hi = (raw.find("\n") + 1 if node.style == ">" else 0), len(raw)
    else:
        return None
    region = raw[lo:hi]
    lead = region[: len(region) - len(region.lstrip(" "))] if node.style == ">" else ""
    region = region[len(lead) :]
    if "\n" not in region or "\\" in region or "''" in region or region[:1] in (" ", "\t"):
        return None
    parts = re.split(r"([ \t]*\r?\n[ \t]*)", region)
    pieces, seps = parts[0::2], parts[1::2]
    old, new = node.value, value
    if node.style == ">":
        if old.endswith("\n") != new.endswith("\n"):
            return None
        old, new = old.removesuffix("\n"), new.removesuffix("\n")
    if not all(pieces) or " ".join(pieces) != old or "\n" in new:
        return None
    old_breaks = list(itertools.accumulate(len(p) + 1 for p in pieces[:-1]))  # index after each joining space
    kept: list[tuple[int, str]] = []
    for (a, b, size) in difflib.SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks():
        for k, pos in enumerate(old_breaks):
            if a <= pos - 1 < a + size and new[b + pos - 1 - a] == " ":
                kept.append((b + pos - 1 - a, seps[k]))
    out, prev = [], 0
    for at, sep in sorted(set(kept)):
        out += [new[prev:at], sep]
        prev = at + 1
    out.append(new[prev:])
    if any(p != p.strip(" \t") or not p for p in out[0::2]):
        return None
    return start, start + len(raw), raw[:lo] + lead + "".join(out) + raw[hi:]


def _item_prefix(text: str, items: list[Node], seq: SequenceNode) -> str:
    """The `    - ` text before block items, copied so new lines line up with their neighbours."""
    for node in items:
        begin = _line_start(text, node.start_mark.index)
        candidate = text[begin : node.start_mark.index]
        if _DASH_PREFIX.match(candidate):
            return candidate
    return " " * seq.start_mark.column + "- "


def _splice_flow(text: str, seq: SequenceNode, items: list[Node], old: list[str | None], values: list[str],
                 safe: bool) -> list[tuple[int, int, str]]:
    """Flow list `[a, b]`: rebuild the inside, reusing each kept item's text and the separators around it."""
    if not items:
        inner = ", ".join(_scalar(v, None, items, True, safe) for v in values)
        return [(seq.start_mark.index, seq.end_mark.index, "[" + inner + "]")]
    seps = [text[a.end_mark.index : b.start_mark.index] for a, b in itertools.pairwise(items)]
    default_sep = Counter(seps).most_common(1)[0][0] if seps else ", "
    pieces: list[tuple[int | None, str]] = []  # (old index or None, text)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, values, autojunk=False).get_opcodes():
        if op == "equal":
            pieces += [(k, text[items[k].start_mark.index : items[k].end_mark.index]) for k in range(i1, i2)]
        elif op != "delete":
            for n, v in enumerate(values[j1:j2]):
                paired = _pairs(old[i1:i2], values[j1:j2]) if op == "replace" else 0
                like = items[i1 + n] if n < paired else None
                like = like if isinstance(like, ScalarNode) else None
                pieces.append((None, _scalar(v, like, items, True, safe)))
    inner = ""
    for n, (k, piece) in enumerate(pieces):
        if n:
            prev = pieces[n - 1][0]
            inner += seps[prev] if prev is not None and k == prev + 1 else default_sep
        inner += piece
    return [(items[0].start_mark.index, items[-1].end_mark.index, inner)]
