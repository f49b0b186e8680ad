"""vLLM command lines in pod specs: find the server by argv, read its effective flags, edit them in place of form.

Public API: ``find_server(pod_spec, container=None) -> ServerCommand``; ``ServerCommand.flags`` / ``.model`` /
``.edit(set=..., unset=...)`` / ``.render()``.
"""

from __future__ import annotations

from vllm_remedy.vllm.cmdline.command import ManifestError, NoServerError, ServerCommand, UnsafeScriptError, find_server
from vllm_remedy.vllm.cmdline.flags import canonical_key

__all__ = ["ManifestError", "NoServerError", "ServerCommand", "UnsafeScriptError", "canonical_key", "find_server"]
