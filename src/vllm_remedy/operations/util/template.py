"""Pure edits of a pod template: new vLLM flags through the command-line editor, in place of form.

Why through ``ServerCommand.edit``: real manifests launch vLLM as argv, ``sh -c`` scripts, ``$(VAR)``
args...; the editor touches only the tokens that must change, so the diff shows exactly the flags.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from vllm_remedy.kube.annotations import TOGGLE_FLAGS, Keys, scan_toggles, toggle_flags_on
from vllm_remedy.vllm.cmdline import ServerCommand, find_server


def server_of(template: Mapping[str, Any], container: str | None = None) -> ServerCommand:
    """The vLLM server of a pod template (UserError when none or ambiguous)."""
    return find_server(dict(template.get("spec") or {}), container)


def with_flags(template: Mapping[str, Any], set_: Mapping[str, str] | None = None, unset: Iterable[str] = (),
               container: str | None = None) -> dict[str, Any]:
    """A copy of ``template`` whose vLLM container has flags ``set_`` (dash names, string values) and not ``unset``."""
    server = server_of(template, container)
    new = copy.deepcopy(dict(template))
    containers = new["spec"]["containers"]
    edited = server.edit(dict(set_ or {}), list(unset))
    for i, c in enumerate(containers):
        if c.get("name") == server.container_name:
            containers[i] = edited
            break
    return new


def missing_flags(template: Mapping[str, Any], wanted: Mapping[str, str], container: str | None = None
                  ) -> dict[str, str]:
    """The ``wanted`` flags the template's server does not already run with (by canonical name, exact value)."""
    flags = server_of(template, container).flags
    return {k: v for k, v in wanted.items() if flags.get(k) != v}


def stale_toggles(keys: Keys, notes: Mapping[str, str], template: Mapping[str, Any], container: str | None
                  ) -> dict[str, None]:
    """The annotations of each recorded toggle whose flag ``template`` does not run with, to drop in the write that
    gives the workload that template (a rollback): left behind, the next deploy would make a second,
    annotation-only write for them, unguarded by the plan that showed the first."""
    running = toggle_flags_on(server_of(template, container).flags)
    return {key: None for toggle in scan_toggles(keys, notes)[0]
            if TOGGLE_FLAGS.get(toggle.name, toggle.name) not in running
            for key in keys.toggle_keys(toggle.name) if key in notes}
