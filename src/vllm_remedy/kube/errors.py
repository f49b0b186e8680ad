"""Errors from talking to a cluster, shaped so the CLI prints one line and nothing is left half-done.

They subclass ``UserError`` because each names something the operator must fix or decide (a missing
context, a deployment that moved under us, a forbidden verb) rather than a bug in vllm-remedy.
"""

from __future__ import annotations

from typing import Any

from vllm_remedy.errors import UserError


class KubeError(UserError):
    """The API answered with an error (or not at all) after retries; ``status`` is 0 for no answer."""

    def __init__(self, message: str, *, status: int = 0, reason: str = "", body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.body = body


class NotFoundError(KubeError):
    """404: the object (or namespace) does not exist."""


class ConflictError(KubeError):
    """409 or a failed JSON-patch ``test`` (422): someone else changed the object; nothing was written."""


class RolloutError(UserError):
    """kubectl's rollout refusals (no history, unknown revision, paused) — the same words kubectl uses."""
