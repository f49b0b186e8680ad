"""The one line ``hub`` says for a model the Hub did not give (split from ``hub``, which decides the resolution): who
refused what, and where the fix belongs (the pod's env, a Secret, HF_HUB_OFFLINE)."""

from __future__ import annotations

from vllm_remedy.hub import ask as hub_ask
from vllm_remedy.hub import pod

CONFIG = hub_ask.CONFIG


def gated(repo_id: str, hub: str, env: pod.Env | None, in_pod: bool) -> str:
    """The line for a gated repository, saying whose token was refused and where a token belongs."""
    line = f"model {repo_id}: gated repository on the Hub ({hub})"
    if not in_pod or env is None or pod.TOKEN not in env:
        return f"{line}; set HF_TOKEN to a token with access to it"
    if env[pod.TOKEN] is None:
        return (f"{line} and the pod sets no HF_TOKEN: vLLM's download is refused (401); set HF_TOKEN in the pod's "
                "env (from a Secret) to a token with access to it")
    if env[pod.TOKEN] != pod.UNREAD:
        return f"{line} and the pod's HF_TOKEN has no access to it: vLLM's download is refused"
    here = "this machine's HF_TOKEN has no access to it" if pod.token(env) else "no HF_TOKEN is set here"
    return (f"{line}; the pod's HF_TOKEN (a Secret) is not read here and {here}: run with a token that has access "
            "to predict it")


def unresolved(repo_id: str, revision: str | None, hub: str, exc: hub_ask.Failed, cached: bool,
                env: pod.Env | None = None, in_pod: bool = False) -> str:
    """The one line for a Hub that did not give the file (``cached``: the cache has the revision's older copy)."""
    if isinstance(exc, hub_ask.NotFound) and cached and exc.kind in ("gated", "repository"):
        said = "gated repository" if exc.kind == "gated" else "not found"
        return f"model {repo_id}: the Hub ({hub}) refused it ({said})"
    if isinstance(exc, hub_ask.NotFound):
        return {
            "gated": gated(repo_id, hub, env, in_pod),
            "repository": _not_shown(repo_id, hub, exc.said),
            "revision": f"model {repo_id}: revision {revision or 'main'} not found on the Hub ({hub})",
            "unauthorized": f"model {repo_id}: the Hub ({hub}) refused the token (401: invalid credentials); set "
                            "HF_TOKEN to a valid token",
            "entry": f"model {repo_id}{f' at revision {revision}' if revision else ''}: the repository has no "
                     f"{CONFIG}",
        }[exc.kind]
    empty = "" if cached else f" and the local Hugging Face cache has no {CONFIG}"
    line = f"model {repo_id}: the Hub ({hub}) {exc.why}{empty}"
    if not exc.why.startswith("is unreachable"):
        return line
    if in_pod and env is not None and env.get(pod.ENDPOINT) is not None:  # the pod names its mirror: not offline
        return (f"{line}; it is the pod's own HF_ENDPOINT: predict from where that Hub answers, or name the "
                "model's config in the policy (model_config)")
    if cached:  # offline reads the cached copy without asking: that helps only where a copy is
        return f"{line}; set HF_HUB_OFFLINE=1 where no Hub is reachable"
    if not in_pod:  # this machine's own model: its caller names --model-config
        return line
    return f"{line}; give the policy a `model_config` (a file or ConfigMap) for clusters without a Hub"


def not_an_id(repo_id: str) -> str:
    """The line for a model that is no repository id. A ``$`` in it is a variable's name that reached the tool
    unexpanded (a shell variable of an ``sh -c`` script, a ``$(VAR)`` from a Secret or an unchecked ConfigMap): the
    pod's vLLM gets the value, so the name is not what it serves and no fix of the id is advised."""
    if "$" in repo_id:
        return (f"model {repo_id}: taken from a variable this tool cannot read (a shell variable of the sh -c script, "
                "or a $(VAR) from a Secret or unchecked ConfigMap), not a repository id")
    return f"model {repo_id}: not a Hugging Face repository id"


def _not_shown(repo_id: str, hub: str, said: str | None) -> str:
    """A repository the Hub does not show. Its 401 "Invalid username or password." (``hub.ask.HIDDEN``) answers a
    misspelled id and a private repository alike for a caller without a token, so that line names both fixes, the id
    first (it is no refused token)."""
    line = f"model {repo_id}: not found on the Hub ({hub})"
    if said != hub_ask.HIDDEN:
        return f"{line} nor in the local Hugging Face cache"
    return (f"{line} (401: {said.rstrip('.')}) nor in the local Hugging Face cache; correct --model, or if the "
            "repository is private, set HF_TOKEN to a token with access to it")
