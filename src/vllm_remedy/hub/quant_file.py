"""ModelOpt's ``hf_quant_config.json``: the quantization scheme of a checkpoint exported by ModelOpt 0.29 or earlier,
kept in a file beside config.json instead of in its ``quantization_config`` (NVIDIA's older ``*-FP8`` repositories).

vLLM reads it when config.json has no ``quantization_config`` and sets the file's whole mapping as the config's
``quantization_config`` (``get_config``, transformers_utils/config.py@0.10.1 and on, @0.30.0 l.829-841: "ModelOpt
0.29.0 and before saves the quantization config in a separate hf_quant_config.json"); what that mapping means per
release (ModelOpt's ``producer`` / ``quantization.quant_algo``) is the quantization reader's. Here it is one more Hub
file: one GET at the revision config.json came from, kept in the Hugging Face cache like config.json, a 404 meaning
"absent" (recorded as ``hf_hub_download`` records it, so the next resolution asks nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.hub import ask as hub_ask
from vllm_remedy.hub import store
from vllm_remedy.vllm.quant_source import FROM_FILE

NAME = "hf_quant_config.json"


def wanted(config: Any) -> bool:
    """Whether vLLM looks for the file: config.json states no ``quantization_config`` (absent or null)."""
    return isinstance(config, Mapping) and config.get("quantization_config") is None


def merged(config: Mapping[str, Any], quant: Any) -> Mapping[str, Any]:
    """``config`` with the file's mapping as its ``quantization_config``, as vLLM sets it, marked as read from this
    file (``quant_source.FROM_FILE``: releases before 0.10.1 never read it); unchanged without one."""
    if isinstance(quant, Mapping):
        quant = {**quant, FROM_FILE: NAME}
    return config if quant is None else {**config, "quantization_config": quant}


def from_dir(directory: Path, parse: Callable[[str, str], Any], read: Callable[[str], str]) -> Any:
    """The file beside a local directory's config.json (None when there is none)."""
    path = directory / NAME
    return parse(read(str(path)), str(path)) if path.is_file() else None


def beside(config: Any, directory: Path, parse: Callable[[str, str], Any], read: Callable[[str], str]) -> Any:
    """``config`` (read from a config.json in ``directory``) as vLLM reads that directory: with the file beside it
    merged when config.json states no scheme (``wanted``, ``merged``), for ``--model-config`` and a policy's
    ``model_config.path`` as for ``--model dir``."""
    return merged(config, from_dir(directory, parse, read)) if wanted(config) else config


def fetch(repo_id: str, revision: str | None, config_path: str, hub: str, cache: str | None,
          token: str | bool | None, offline: bool) -> str | None:
    """The file's text at the commit config.json came from (``config_path``: its snapshot in the cache), None when
    the repository has none there; a UserError (one line) when the Hub fails to say."""
    import huggingface_hub as hf

    commit = Path(config_path).parent.name
    if not hub_ask.COMMIT.fullmatch(commit):  # not a cache snapshot: nothing to pin the file's revision to
        return None
    cached = hf.try_to_load_from_cache(repo_id, NAME, cache_dir=cache, revision=commit)
    if isinstance(cached, str):
        return _text(cached)
    if cached is not None or offline:  # recorded absent at this commit, or no Hub to ask (vLLM finds none either)
        return None
    seconds = hub_ask.limit()
    try:
        import time

        deadline = time.monotonic() + seconds
        got = hub_ask.within(seconds, lambda: hub_ask.ask(repo_id, revision or "main", hub, cache, token, deadline,
                                                          NAME))
    except hub_ask.NotFound as exc:
        if exc.kind == "entry":
            store.absent(cache, repo_id, commit, NAME)
            return None
        raise UserError(f"model {repo_id}: the Hub ({hub}) refused {NAME} ({exc.kind})") from None
    except hub_ask.Failed as exc:
        raise UserError(f"model {repo_id}: the Hub ({hub}) {exc.why} (for {NAME})") from None
    hub_ask.warn_unkept(got, cache)
    return got.read().decode("utf-8", errors="replace")


def _text(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read(hub_ask.MAX_CONFIG_BYTES + 1).decode("utf-8", errors="replace")
