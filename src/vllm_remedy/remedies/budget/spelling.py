"""Flag values the release's argument parser refuses, and the literal each one means: the one-token fix.

``--max-model-len 16Ki`` (no release reads ``Ki``), ``16k`` where the release parses the flag as a plain int,
``auto`` before 0.14.0: vLLM stops at argument parsing (exit 2), so no pod ever starts and nothing can be sized as
written. The fix is the same number spelled as the release reads it, so the planner plans with that literal and
every step writes it (``apply``); ``auto`` before it existed is planned as unset, and the planner's step then writes an
explicit length, as it does for an implicit one. A spelling with no clear number (``lots``) is left for the caller's
error.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from vllm_remedy.errors import UserError
from vllm_remedy.remedies.plan import Plan, Step
from vllm_remedy.vllm import hf_overrides
from vllm_remedy.vllm.cmdline import ServerCommand, canonical_key, unrecognized
from vllm_remedy.vllm.cmdline.values import vllm_int
from vllm_remedy.vllm.manifest_flags_file import CONFIG_FIELD
from vllm_remedy.vllm.manifest_flags_file import FLAG as CONFIG_FLAG
from vllm_remedy.vllm.memory import EngineSettings
from vllm_remedy.vllm.memory.occurrences import refused_overrides
from vllm_remedy.vllm.versions import rules

# 16Ki, 16KiB, 16ki, 1.5K: binary multiples (a lowercase k/m/g/t alone is decimal, as vLLM reads it)
_IEC = re.compile(r"(\d+(?:\.\d+)?)\s*(?:([KMGT])[iI]?|([kmgt])[iI])B?")
_POWER = {"K": 1, "M": 2, "G": 3, "T": 4}
_AUTO = ("auto", "-1")


@dataclass(frozen=True)
class Respelled:
    """One refused value: the flag, the text written, the literal planned (None: left unset) and vLLM's refusal."""

    flag: str
    typed: str
    literal: str | None
    why: str
    unknown: bool = False  # a flag the release does not have: planned without it, and the fix removes or corrects it
    word: bool = False  # a bare word argparse leaves over (``extra``): planned without it, the fix removes the word
    in_file: str = ""  # the --config file that gives a switch this word: only that file's line can remove it

    @property
    def refused_value(self) -> str | None:
        """argparse's words when it refuses this flag's value (``--hf-overrides '{bad}'``, ``--dtype float17``), not
        the flag itself: None for a flag the release lacks or a stray word (``unrecognized arguments``)."""
        message = getattr(self.typed, "message", None)
        return None if self.word or message is None or message.startswith("unrecognized") or self.advice else message

    @property
    def refusal(self) -> str:
        """vLLM's refusal and its exit code (``why`` words an exit other than argparse's 2 itself)."""
        return self.why if getattr(self.typed, "exit_code", 2) != 2 else f"{self.why} (exit 2: the pod never starts)"

    @property
    def advice(self) -> str | None:
        """What to write instead when vLLM refuses the command as a whole (no model tag, ``--model``: ``Refused``)."""
        if self.in_file:
            return (f"in the --config file {self.in_file}, write that switch's value as a YAML boolean (true or "
                    f"false, unquoted): vLLM passes {self.typed} on as a word, which no edit of the command removes")
        return getattr(self.typed, "advice", None)

    def phrase(self) -> str:
        """The problem: the refusal, and what is planned instead."""
        if self.advice:
            return f"{self.refusal}; {self.advice}"
        if self.word:
            return f"{self.why} (exit 2: the pod never starts); remove the word {self.typed} (planned without it)"
        if self.unknown:
            return f"{self.why} (exit 2: the pod never starts); remove or correct it (planned without it)"
        planned = (f"planned as {self.literal}, which every step writes" if self.literal is not None else
                   f"planned as unset: every step writes an explicit --{self.flag}")
        return f"{self.why} (exit 2: the pod never starts); {planned}"

    def note(self) -> str:
        """Whose settings the current prediction is for."""
        if self.advice:
            return f"as written vLLM refuses the start: {self.advice}"
        if self.word:
            return f"the current prediction is without the word {self.typed}: as written vLLM refuses the start"
        planned = f"--{self.flag} {self.literal}" if self.literal is not None else f"no --{self.flag}"
        return f"the current prediction is for {planned}: as written ({self.typed!r}) vLLM refuses the start"


def meaning(flag: str, value: str) -> int | None:
    """The integer a spelling plainly means: what the newest vLLM reads (``16k`` 16000, ``16K`` 16384), an IEC
    binary multiple (``16Ki`` 16384, ``1.5K`` 1536) or an integral decimal (``16384.0``); None otherwise."""
    text = value.strip()
    if (got := vllm_int(text, flag)) is not None or (got := vllm_int(text, "max-model-len")) is not None:
        return got  # the flag's own reading, else the newest human_readable_int's (16k is 16000 for any flag)
    if (m := _IEC.fullmatch(text)) is not None:
        number = float(m.group(1)) * 1024 ** _POWER[(m.group(2) or m.group(3)).upper()]
        return int(number) if number.is_integer() else None
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() and abs(number) < 2**63 else None


def _refusal(flag: str, value: str, version: str | None) -> str | None:
    try:
        EngineSettings.from_flags({flag: value}, version)
    except UserError as exc:
        return str(exc)
    return None


def respell(flags: Mapping[str, str], version: str | None) -> tuple[dict[str, str], list[Respelled]]:
    """(the flags to plan with, each refused spelling with its literal): only values vLLM ``version`` refuses and
    whose literal it takes are changed; anything else stays for the caller's own error."""
    out, found = dict(flags), []
    for flag, value in flags.items():
        why = _refusal(flag, value, version)
        if why is None:
            continue
        if flag == "max-model-len" and value.strip().lower() in _AUTO:
            out.pop(flag)
            found.append(Respelled(flag, value, None, why))
            continue
        number = meaning(flag, value)
        if number is not None and _refusal(flag, str(number), version) is None:
            out[flag] = str(number)
            found.append(Respelled(flag, value, str(number), why))
    return out, found


def overridden(server: ServerCommand, flags: Mapping[str, str], version: str | None,
               replaced: Collection[str] = ()) -> list[Respelled]:
    """An overridden occurrence the release refuses (``memory.occurrences``: vLLM types every occurrence): the start
    stops there although a later one would win, so it is planned with the kept value, which every step writes once
    (an edit collapses a flag's duplicates to one). Then each flag the release certainly does not have
    (``cmdline.unrecognized``): planned without it, which every step writes."""
    found = [Respelled(flag, value, flags[flag], why)
             for flag, value, why in refused_overrides(server, flags, version, None, replaced)]
    label = rules(version).label
    out = []
    refused = unrecognized.unrecognized(server, version)
    strays = _strays(server, refused)
    from_file = {shlex.quote(t.value) for t in server.positionals if t.field == CONFIG_FIELD}
    path = next((o.value for o in server.options if o.name == CONFIG_FLAG), "")  # merged flags hold no --config
    for w in refused:
        if getattr(w, "advice", None):  # the command as a whole: no flag is planned without, nothing is unset
            out.append(Respelled("", w, None, unrecognized.why(w, label)))
        elif w in strays:
            out.append(Respelled("", w, None, unrecognized.why(w, label), unknown=True, word=True,
                                 in_file=(path or "given") if w in from_file else ""))
        elif canonical_key(w.split()[0]) not in replaced:
            out.append(Respelled(canonical_key(w.split()[0]), w, None, unrecognized.why(w, label), unknown=True))
    return found + out


def stray_words(server: ServerCommand, version: str | None) -> list[str]:
    """The bare words of ``server``'s argv that vLLM ``version``'s parser leaves over (``unrecognized arguments``: a
    stray positional, a legacy StoreBoolean's true/false), as written: the fix removes each
    (``ServerCommand.edit(drop=...)``), not a flag of that name."""
    return _strays(server, unrecognized.unrecognized(server, version))


def _strays(server: ServerCommand, refused: list[str]) -> list[str]:
    """The bare words among ``refused`` (``unrecognized``'s parts of ``server``'s argv)."""
    bare = {shlex.quote(t.value) for t in server.positionals}  # after ``--`` a word like ``--foo`` is one too
    return [w for w in refused
            if getattr(w, "message", "").startswith("unrecognized") and (not w.startswith("-") or w in bare)]


def without_refused(flags: Mapping[str, str], found: list[Respelled]) -> dict[str, str]:
    """``flags`` without those argparse refuses outright (``unknown``: a flag the release lacks, a value outside its
    choices, a flag without its value): they are planned without, so their value is never typed (``fp9``, ``''``
    would otherwise stop the plan with a bad-input error where check predicts argument_refused)."""
    gone = {r.flag for r in found if r.unknown}
    return {k: v for k, v in flags.items() if k not in gone}


def unset_config_flags(found: list[Respelled]) -> set[str]:
    """``--hf-overrides`` / ``--hf-config-path`` planned unset (the release lacks the flag, or argparse refuses an
    occurrence's value): every step removes them, so the model is sized on the config as the checkpoint has it, and
    the figures shown are what that change gives."""
    return {r.flag for r in found if r.unknown and r.flag in (hf_overrides.FLAG, hf_overrides.PATH_FLAG)}


def _unknown_reason(found: list[Respelled], label: str) -> str:
    """The one-step fix for argparse's refusals alone: each refused value named in argparse's words, then the flags
    the release does not have, then the stray words."""
    parts = [f"remove {r.typed}, which vLLM {label} refuses at argument parsing (argparse: \"{r.refused_value}\")"
             for r in found if r.refused_value is not None]
    if any(r.refused_value is None and not r.word for r in found):
        parts.append(f"remove the flags vLLM {label} does not have, or correct their spelling")
    if words := " ".join(r.typed for r in found if r.word):
        parts.append(f"remove the word {words}")
    tail = ("sized on the model's own config, as the checkpoint has it" if unset_config_flags(found) else
            "nothing else changes")
    return f"{', and '.join(parts)}; {tail}"


def apply(plan: Plan, found: list[Respelled], version: str | None) -> Plan:
    """``plan`` with the refused spellings as its first problem and every step writing their literals (unsetting one
    planned as unset); a plan with nothing else to change gets the respelling as its one step."""
    if not found:
        return plan
    # no edit of flags or words fixes it (the model's place, a word the --config file gives): said, not planned
    if all(r.advice for r in found) or any(r.in_file for r in found):
        notes = (*(r.note() for r in found), *plan.notes)
        verdict = "refused_as_written" if plan.verdict == "no_change_needed" else plan.verdict  # it never starts
        return dataclasses.replace(plan, verdict=verdict, problem="; ".join(r.phrase() for r in found), notes=notes)
    found = [r for r in found if not r.advice]
    problem = "; ".join(r.phrase() for r in found)
    literals = {r.flag: r.literal for r in found if r.literal is not None}
    unset = tuple(r.flag for r in found if r.literal is None and not r.word and r.flag)
    drop = tuple(r.typed for r in found if r.word)
    steps = tuple(_relabelled(dataclasses.replace(
        s, set={**literals, **s.set}, unset=tuple(dict.fromkeys((*s.unset, *(f for f in unset if f not in s.set)))),
        drop=tuple(dict.fromkeys((*s.drop, *drop))))) for s in plan.steps)
    verdict = plan.verdict
    if verdict == "no_change_needed":
        label = rules(version).label
        words = " ".join(r.typed for r in found if r.word)
        reason = (f"remove the word {words} vLLM {label} leaves over; nothing else changes"
                  if all(r.word for r in found) else _unknown_reason(found, label)
                  if all(r.unknown for r in found) else f"write the value as vLLM {label} parses it; nothing else "
                  "changes")
        steps = (Step(rank=1, lever="spelling", reason=reason, prediction=plan.current, set=literals, unset=unset,
                      drop=drop),)
        verdict = "change"
    before = "" if plan.problem.startswith("none:") else f"; {plan.problem}"
    notes = (*(r.note() for r in found), *plan.notes)
    return Plan(plan.kind, verdict, problem + before, plan.current, steps, notes, plan.subject)


def _relabelled(step: Step) -> Step:
    """A rung whose own change is already written (its lever's value unchanged) and that only removes words or
    respells: labelled by what it changes (``spelling``), not by a lever it leaves as it is."""
    if step.drop and not step.set and not step.unset and step.template.empty:
        return dataclasses.replace(step, lever="spelling")
    return step
