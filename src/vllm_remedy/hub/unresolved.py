"""Why a model is unresolved, as ``hub`` raises it and :mod:`vllm_remedy.vllm.resolved` records it (split from
``hub``, which decides the resolution): the exceptions callers catch and the one line a prediction carries."""

from __future__ import annotations

from vllm_remedy.errors import UserError


class Unresolved(UserError):
    """A model whose config could be found nowhere; ``str()`` is one line saying why. ``kind``: what the Hub (or the
    offline switch) said, for a rehearsal pod's log in its release's words (``sim.vllm_pod.hub_refusal``): "gated",
    "unauthorized" (a token it refuses), "revision", "repository", "entry", "unreachable" (no connection, no answer in
    time or a 5xx; ``hub_said`` then ``hub.ask``'s words for it), "no_token" (a bare ``--hf-token`` in a pod without
    a token: ``hub.bare_token``), "offline" (the pod's own HF_HUB_OFFLINE;
    this process's stands for a rehearsal that reaches no Hub at all, whose pods keep vLLM's generic refusal), or
    None (anything else); ``hub``: the endpoint asked."""

    kind: str | None = None
    hub: str | None = None
    hub_said: str | None = None  # the Hub's own message (X-Error-Message), when it sent one

    def said(self, kind: str | None, hub: str | None = None, hub_said: str | None = None) -> Unresolved:
        self.kind, self.hub, self.hub_said = kind, hub, hub_said
        return self


class Unavailable(Unresolved):
    """The Hub's own answer, which vLLM gets too and dies on at startup (``model_unavailable``): no such repository
    or revision, or a gated repository refused to the token vLLM sends. A policy's ``model_config`` does not overrule
    it: that fallback is for a Hub that cannot be asked."""


class Reason(str):
    """The one line a model is unresolved for, as :mod:`vllm_remedy.vllm.resolved` records it; ``unavailable``:
    vLLM's start fails on it too (the Hub's definitive answer), so a prediction says ``model_unavailable``."""

    unavailable: bool = False

    @classmethod
    def of(cls, exc: Unresolved) -> Reason:
        line = cls(str(exc))
        line.unavailable = isinstance(exc, Unavailable)
        return line
