"""A flag given twice: vLLM's argument parser types every occurrence, so an overridden value can still stop it.

argparse calls the flag's ``type`` on each occurrence as it reads argv (``_get_values`` in ``parse_known_args``),
and the namespace keeps only the last; a value the release refuses anywhere ends ``vllm serve`` with
``argument --max-model-len: invalid human_readable_int value`` before the later one is read. ``ServerCommand.flags``
keeps the last, so each overridden value is typed here with the same rules as the kept one
(``EngineSettings.from_flags``): whatever that refuses for this release, vLLM refuses at this occurrence too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline import ServerCommand
from vllm_remedy.vllm.memory.settings import EngineSettings


def refused_overrides(server: ServerCommand, flags: Mapping[str, str], version: str | None,
                      inputs: Mapping[str, str] | None = None, replaced: Collection[str] = ()
                      ) -> list[tuple[str, str, str]]:
    """(flag, overridden value, why vLLM ``version`` refuses it) for each overridden occurrence in ``server``'s argv
    that release refuses, in argv order. ``flags`` are the effective flags as the caller types them (an LWS
    leader's grouped flags, say); each overridden value is tried in place of the kept one. Flags in ``replaced``
    (given on plan's command line) replace every occurrence, so theirs are not judged."""
    out: list[tuple[str, str, str]] = []
    for name, value in server.overridden():
        if name not in flags or flags[name] == value or name in replaced:
            continue
        try:
            EngineSettings.from_flags({**flags, name: value}, version, inputs)
        except UserError as exc:
            out.append((name, value, f"{exc} (an earlier --{name} {value}, overridden by a later one: vLLM's "
                                     "argument parser reads every occurrence and stops at the first it refuses)"))
    return out


def overridden_refusal(server: ServerCommand, flags: Mapping[str, str], version: str | None,
                       inputs: Mapping[str, str] | None = None, replaced: Collection[str] = ()) -> str | None:
    """The first of :func:`refused_overrides` as one line, None when every occurrence parses."""
    found = refused_overrides(server, flags, version, inputs, replaced)
    return found[0][2] if found else None
