"""``--hf-overrides`` and ``--hf-config-path`` typed on `estimate` and `plan`: read as a manifest's are.

A pod's flags reach ``vllm.hf_overrides`` through ``check``, ``plan -f`` and the deploys; typed here they go through
the same functions, so an estimate for a pod with overrides is the answer ``check`` gives for it. What the release's
parser refuses (the flag before its first release, JSON it cannot read) is argparse's refusal, exit 2, one line naming
the flag; an override the tools cannot size is "cannot predict", in ``check``'s words.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import hf_overrides
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, rules

FLAG, PATH_FLAG, PATH_SINCE = hf_overrides.FLAG, hf_overrides.PATH_FLAG, hf_overrides.PATH_SINCE


def release(version: str | None) -> tuple[int, int, int]:
    """The release the flags are read by: the typed one, else the newest (as the memory rules default)."""
    return parse_version(version) or NEWEST_RELEASE


#: Where ``Occurrences`` keeps every value typed for ``--hf-overrides`` on the namespace, in order: argparse keeps the
#: last, but vLLM's converts each occurrence with the flag's type as it parses, so an earlier bad one is refused too.
TYPED = "hf_overrides_typed"


class Occurrences(argparse.Action):
    """``store`` that also keeps every occurrence of the flag (on the namespace, ``TYPED``), for ``refusal``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        setattr(namespace, TYPED, [*(getattr(namespace, TYPED, None) or []), str(values)])
        setattr(namespace, self.dest, values)


def earlier(args: argparse.Namespace) -> list[str]:
    """The ``--hf-overrides`` values typed before the last one (which argparse keeps), for ``refusal``."""
    return list(getattr(args, TYPED, None) or [])[:-1]


def refusal(flags: Mapping[str, str], version: str | None, before: Sequence[str] = ()) -> None:
    """Raise argparse's refusal of either flag in release ``version`` (exit 2): a release without the flag, or
    ``--hf-overrides`` JSON its type does not read (``hf_overrides.argparse_refusal``'s words), in any occurrence
    typed (``before``: the earlier ones; argparse converts each as it parses: ``--hf-overrides bad --hf-overrides
    '{...}'`` is refused by ``type=json.loads`` before 0.9.0, and kept as text, then replaced, from 0.9.0)."""
    v, label = release(version), rules(version).label
    for flag, since in ((FLAG, hf_overrides.SINCE), (PATH_FLAG, PATH_SINCE)):
        if flag in flags and v < since:
            raise UserError(f"{flag}: vLLM {label} has no such flag (added in {'.'.join(map(str, since))}); it "
                            f"refuses the argument at parsing (argparse: \"unrecognized arguments: --{flag} "
                            f"{flags[flag]}\")")
    text = flags.get(FLAG)
    for value in [*before, text] if text is not None else []:
        if (words := hf_overrides.argparse_refusal(str(value), v)) is not None:
            raise UserError(f"{FLAG}: vLLM {label} refuses the value at argument parsing (argparse: \"{words}\")")
    if PATH_FLAG in flags and not str(flags[PATH_FLAG]).strip():
        raise UserError(f"{PATH_FLAG}: empty; name a repository id or a directory with the config.json")


def path_with_model_config() -> UserError:
    """Both name the config vLLM reads: estimate and plan refuse the pair alike."""
    return UserError(f"--{PATH_FLAG} with --model-config: --model-config is already the config vLLM reads; give "
                     "--model with --hf-config-path, or the config alone with --model-config")


def config_path(flags: Mapping[str, str]) -> str | None:
    """``--hf-config-path`` when given: where vLLM reads the config instead of the model."""
    return hf_overrides.config_source(flags, None)


def resolved_path(path: str, resolve: Callable[[str], ModelSpec]) -> ModelSpec:
    """The spec of ``--hf-config-path``'s config, resolved as --model is (catalog, cache, Hub, a local directory);
    its failure named as ``check`` names it (``--hf-config-path PATH: why``)."""
    try:
        return resolve(path)
    except UserError as exc:
        raise UserError(f"--{PATH_FLAG} {path}: {exc}") from None


def overridden(spec: ModelSpec, config_from: str, revision: str | None, flags: Mapping[str, str],
               version: str | None, literal: bool = False) -> ModelSpec:
    """``spec`` (the config read from ``config_from``) under ``--hf-overrides``, applied by
    ``hf_overrides.applied`` as for a manifest: flat keys replace, nested ones merge from 0.12.0. A value that is
    JSON but not an object is bad input naming the flag (vLLM: "hf_overrides must be a dict or a callable"); an
    override the tools cannot size is "cannot predict", in ``check``'s words."""
    text = flags.get(FLAG)
    if text is None:
        return spec
    if "$" in str(text) and not literal:  # a manifest's variable this tool cannot read (``hf_received``), as check
        raise UserError(f"cannot predict: --{FLAG} {text!r} carries a value this tool cannot see (a variable)")
    try:
        parsed = hf_overrides.parse(str(text))
    except (ValueError, RecursionError):  # text argparse keeps as a string (0.9.0+, no braces): not a dict
        parsed = str(text)
    if not isinstance(parsed, Mapping):
        raise UserError(f"{FLAG}: {text!r} is not a JSON object of config keys (vLLM refuses it: hf_overrides must "
                        "be a dict or a callable)")
    try:
        return hf_overrides.applied(spec, config_from, revision, flags, release(version), literal)
    except UserError as exc:
        raise UserError(f"cannot predict: {exc}") from None
