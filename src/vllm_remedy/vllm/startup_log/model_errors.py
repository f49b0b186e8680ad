"""vLLM failing to get the served model's config (``Failure.MODEL_UNAVAILABLE``), as its log shows it.

Before any engine exists vLLM reads config.json from a local directory or the Hugging Face Hub; when neither has it the
start dies there, and no setting or memory change can help: the model id, revision, volume or token is wrong. The
words, each from a public log:

- vLLM's own message since 0.8 (transformers_utils/config.py, vllm-project/vllm#13724): ``Invalid repository ID or
  local directory specified: '<model>'`` (vllm-project/vllm#13510, #17287), inside pydantic's "Value error, ..." once
  ModelConfig is a pydantic dataclass (vllm-project/vllm#22043);
- transformers' before it: ``<model> is not a local folder and is not a valid model identifier listed on
  'https://huggingface.co/models'``; huggingface_hub's ``HFValidationError: Repo id must be in the form 'repo_name'
  or 'namespace/repo_name': '/model'`` for a path that is not mounted (vllm-project/vllm#5727, #12867);
- huggingface_hub's errors through either: ``RepositoryNotFoundError`` / ``Repository Not Found for url``,
  ``RevisionNotFoundError`` / ``Revision Not Found for url``, ``GatedRepoError`` / ``Cannot access gated repo for
  url``, transformers' ``You are trying to access a gated repo``, and a bare ``401 Client Error`` for a token the Hub
  refuses (tenstorrent/tt-inference-server#37, huggingface/transformers' utils/hub.py ``cached_files``), in httpx's
  words from huggingface_hub 1.x (``'401 Unauthorized' for url``);
- what each release prints for a gated repository, a missing revision, a refused token or an offline pod with nothing
  cached (``sim.vllm_pod.hub_refusal`` cites the releases): transformers' ``is not a valid git identifier``,
  huggingface_hub's ``OfflineModeIsEnabled`` (0.6.x) and ``LocalEntryNotFoundError`` under ``local_files_only``
  (transformers' "We couldn't connect to '<endpoint>' to load"), vLLM's ``No supported config format found in
  <model>`` (0.6.1-0.7.3), ``Unsupported config format: ConfigFormat.AUTO`` (0.8.0, 0.8.3) and ``Could not detect
  config format`` (0.8.5 on, inside its own message), which a missing revision or an empty offline listing ends in;
  the last is also how every release from 0.8.5 ends for a repository (or directory) that exists without config.json
  or params.json, inside vLLM's own message, which from 0.9.1 pydantic prints without its cause, so from 0.11.0
  (where the Hub's "no" fails earlier, in transformers' words) that message alone says just this
  (``sim.vllm_pod.hub_refusal.no_config``): both are reason ``no_config``, whose advice names the older releases'
  other causes, not a wrong id first;
- a bare ``--hf-token`` (``token=True``) in a pod with no token: huggingface_hub's ``LocalTokenNotFoundError: Token is
  required (`token=True`), but no token found`` (``hub.bare_token``);
- a Hub that could not be asked (a refused connection, no answer in time, a 5xx): requests' ``ConnectionError`` /
  ``ReadTimeout`` / ``500 Server Error``, httpx's ``ConnectError`` / ``ReadTimeout`` / ``Server error '500 ...'``
  from huggingface_hub 1.x, and huggingface_hub's ``LocalEntryNotFoundError`` "An error happened while trying to
  locate the file on the Hub" (measured with huggingface_hub 0.35.3 and 1.33.0, ``sim.vllm_pod.hub_refusal``);
- vLLM's own ERROR records of its retried listing (0.7.3-0.10.2, ``sim.vllm_pod.hub_retry``): ``Error retrieving file
  list: <error>, retrying 1 of 2`` says vLLM asks again, so it is no failure whatever error it names (the listing may
  answer the second time); the last attempt's record, without that tail, is raised at once, and names the Hub it could
  not reach in requests' words without the exception's name (``Max retries exceeded with url``, ``Read timed out``);
- a download into a cache on a read-only volume: the mount's ``Read-only file system`` on the repository's cache
  folder, re-raised by transformers as it is (``sim.vllm_pod.hf_cache``); a cache the pod's user may not write
  (errno 13 ``PermissionError`` on ``/.cache`` for a non-root pod whose HOME is /, or on a root-owned volume's ``hub``
  folder), raised by huggingface_hub's first mkdir into the cache, which transformers words ``PermissionError at
  <path> when downloading <repo>. Check cache directory permissions`` (huggingface/inference-benchmarker#30: vLLM
  0.9.1 on OpenShift; an arbitrary UID's HOME is /, vllm-project/vllm#10185; ``sim.vllm_pod.hub_cache_denied``).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

_MODEL = r"'(?P<model>[^']*)'"
# (pattern, reason) in the order a line is tried; the first match names the reason.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # vLLM's own wrapping message: alone (no more specific line before it) from 0.11.0 it means the config was not
    # found in a repository or directory that exists (``no_config``); before, it also wraps a missing one
    (re.compile(rf"Invalid repository ID or local directory specified: {_MODEL}"), "no_config"),
    (re.compile(r"(?P<model>\S+) is not a local folder and is not a valid model identifier"), "not_found"),
    (re.compile(rf"HFValidationError: Repo id must (?:be in the form|use alphanumeric).*: {_MODEL}"), "invalid_id"),
    (re.compile(r"GatedRepoError|Cannot access gated repo|You are trying to access a gated repo"), "gated"),
    (re.compile(r"RevisionNotFoundError|Revision Not Found for url|is not a valid git identifier \(branch name"),
     "revision_not_found"),
    (re.compile(r"RepositoryNotFoundError|Repository Not Found for url"), "repository_not_found"),
    (re.compile(r"\b401 Client Error\b|'401 Unauthorized' for url"), "unauthorized"),
    # a bare --hf-token (token=True) and no token in the pod: huggingface_hub refuses before any request
    # (utils/_headers.py ``get_token_to_send``, 0.35.3 l.159-164, 1.33.0 l.139-144; ``hub.bare_token``)
    (re.compile(r"LocalTokenNotFoundError|Token is required \(`token=True`\), but no token found"), "no_token"),
    # the Hub's own words for a token it refuses (huggingface_hub leaves that 401 a plain HTTP error) ...
    (re.compile(r"Invalid credentials in Authorization header"), "unauthorized"),
    # ... and for a repository it does not show to a caller without a token, missing or private, on the line after a
    # RepositoryNotFoundError's (vast-ai/base-image#128, tmylla/NER_ZH#1: ids that never existed)
    (re.compile(r"Invalid username or password\."), "repository_not_found"),
    # no Hub to ask: huggingface_hub's LocalEntryNotFoundError after a failed HEAD, or the HTTP stack's own error (a
    # refused connection, a read timeout, a 5xx) where vLLM's listing raises it (``sim.vllm_pod.hub_refusal``)
    (re.compile(r"An error happened while trying to locate the file on the Hub|requests\.exceptions\.(?:ConnectionError"
                r"|ReadTimeout|ConnectTimeout)|httpx\.(?:ConnectError|ReadTimeout|ConnectTimeout)|\b5\d\d Server Error:"
                r"|Server error '5\d\d "), "hub_unreachable"),
    # ... and str() of requests' errors in with_retry's record of the listing's last attempt (config.py@0.7.3 l.100)
    (re.compile(r"Error retrieving file list: .*(?:Max retries exceeded with url|Read timed out)"), "hub_unreachable"),
    (re.compile(r"OfflineModeIsEnabled|outgoing traffic has been disabled|We couldn't connect to '[^']*' to load"),
     "offline"),
    (re.compile(r"Read-only file system: '[^']*/models--(?P<model>[\w.-]+--[\w.-]+)'"), "cache_read_only"),
    # transformers' own words for a PermissionError (EACCES, never EROFS) in its download (utils/hub.py@4.57.1
    # l.523-528, @5.0.0 l.461-466: "PermissionError at <path> when downloading <repo>. Check cache directory ...")
    (re.compile(r"PermissionError at \S+ when downloading (?P<model>\S+)\. Check cache directory permissions"),
     "cache_not_writable"),
    # a cache the pod's user may not write (not a read-only mount): a non-root pod whose HOME is / ('/.cache'), or a
    # root-owned volume; huggingface_hub's first mkdir or lock raises the OS error as it is, as for EROFS above
    (re.compile(r"PermissionError: \[Errno 13\] Permission denied: '(?P<path>[^']*(?:\.cache|huggingface|/hub(?:/|$)"
                r"|models--)[^']*)'"), "cache_not_writable"),
    (re.compile(r"No supported config format found in (?P<model>\S+?)\.?$"), "not_found"),
    # 0.8.5 on: vLLM's own format detection found neither config.json nor params.json where it looked, raised inside
    # its "Invalid repository ID" message (above, which this outranks): the id may well be right
    (re.compile(r"Could not detect config format for no config file"), "no_config"),
    (re.compile(r"Unsupported config format: ConfigFormat\.AUTO"), "not_found"),
)
#: with_retry's record of an attempt it makes again (transformers_utils/config.py@0.7.3 l.102, @0.10.2 l.278), on the
#: last line of its message: not the start's end
_RETRIED = re.compile(r", retrying \d+ of \d+$")
# Where a huggingface_hub message names the repository: its URL (…/api/models/<repo>/…, …/<repo>/resolve/…).
_URL = re.compile(r"https?://[^/\s]+/(?:api/models/)?(?P<model>[\w.-]+/[\w.-]+)/(?:resolve|revision|tree)/")
#: Most specific first: a chained traceback prints the root cause (a 401, then the gated repository) before vLLM's
#: own wrapping message, and the most specific line says what to fix.
#: huggingface_hub's RepositoryNotFoundError outranks a bare 401: that 401 is its cause (the raw HTTP error printed
#: first), not a refused token, which huggingface_hub raises as the plain 401 alone.
REASON_ORDER = ("gated", "revision_not_found", "repository_not_found", "unauthorized", "no_token", "hub_unreachable",
                "offline",
                "cache_read_only", "cache_not_writable", "invalid_id", "no_config", "not_found")
ADVICE = {
    "not_found": "correct --model (a Hugging Face repository id, or a directory the pod mounts holding config.json) "
                 "and --revision, or mount the model's volume (some releases say no more than this for a missing "
                 "revision, or for HF_HUB_OFFLINE=1 with nothing cached)",
    "no_config": "give vLLM a config it reads for --model: it found neither config.json (Hugging Face format) nor "
                 "params.json (Mistral format). From vLLM 0.11.0 a repository, revision or token the Hub refuses "
                 "fails earlier, in transformers' or huggingface_hub's words (printed before this line), so this line "
                 "alone means the repository or directory exists but holds no config: add the checkpoint's "
                 "config.json, serve a repository that has one, or mount the volume that holds it (the id may well "
                 "be right). Before 0.11.0 the same line also wraps an id, revision or local directory that does not "
                 "exist, or HF_HUB_OFFLINE=1 with nothing cached: then check --model and --revision",
    "invalid_id": "correct --model: it is neither a directory the pod has (is the volume mounted?) nor a repository id",
    "revision_not_found": "correct --revision (a branch, tag or commit the repository has)",
    "repository_not_found": "correct --model: the Hub shows no repository by that id (it answers a misspelled id and "
                            "a private repository alike, 401 \"Invalid username or password.\" without a token); if "
                            "the repository is private, give the pod HF_TOKEN (from a Secret) for an account with "
                            "access to it",
    "gated": "give the pod HF_TOKEN (from a Secret) for an account granted access to the gated repository",
    "unauthorized": "give the pod a valid HF_TOKEN (the Hub refused the one it has: invalid credentials)",
    "no_token": "vLLM's --hf-token was given without a value, which asks huggingface_hub for a stored token, and the "
                "pod has none: set HF_TOKEN in the pod's env (from a Secret), mount a token file at $HF_HOME/token "
                "(what `hf auth login` writes), or give --hf-token the token's value",
    "cache_read_only": "the pod's Hugging Face cache (HF_HOME / HF_HUB_CACHE) is a read-only volume without the "
                       "model: pre-load the model into that volume, or point HF_HUB_CACHE at a writable one "
                       "(an emptyDir)",
    "cache_not_writable": "the pod's user may not write its Hugging Face cache (permission denied: a non-root pod "
                          "whose HOME is / or not its own, or a volume owned by another user): point HF_HOME (or "
                          "HF_HUB_CACHE) at a writable volume (an emptyDir), give the volume the pod's group "
                          "(securityContext.fsGroup), or pre-load the model into it",
    "hub_unreachable": "the pod could not reach its Hub (HF_ENDPOINT refused the connection, did not answer in time, "
                       "or answered 5xx) and its Hugging Face cache lacks the model: let the pod reach the Hub "
                       "(network policy, proxy, HF_ENDPOINT; vLLM asks again at each restart) or pre-load the model "
                       "into the cache volume the pod mounts (HF_HOME)",
    "offline": "the pod reached no Hub (HF_HUB_OFFLINE=1, or HF_ENDPOINT unreachable) and its Hugging Face cache lacks "
               "the model: pre-load it into the cache volume the pod mounts (HF_HOME), or let the pod reach the Hub",
}


def unavailable(message: str) -> dict[str, Any] | None:
    """The detail (reason, model when the line names it, advice, the line) of this line's refusal, or None."""
    if _RETRIED.search(message.rstrip()):
        return None
    for pattern, reason in _PATTERNS:
        if (m := pattern.search(message)) is not None:
            detail: dict[str, Any] = {"reason": reason, "advice": ADVICE[reason], "error": message.strip()}
            found = m.groupdict()
            model = found.get("model") or ((u := _URL.search(message)) and u["model"])
            if reason == "cache_read_only" and found.get("model"):  # the cache's folder name: org--name
                model = found["model"].replace("--", "/", 1)
            if reason == "cache_not_writable" and found.get("path"):  # errno 13: the model when a folder names it
                detail["path"] = found["path"]
                folder = re.search(r"/models--([\w.-]+?--[\w.-]+)", found["path"])
                model = folder[1].replace("--", "/", 1) if folder else None
            if model:
                detail["model"] = model
            return detail
    return None



_PACKAGES = "/usr/local/lib/python3.12/dist-packages"
#: From 0.8 vLLM wraps every failure to read the config in its own message (vllm-project/vllm#13724).
OWN_MESSAGE_SINCE = (0, 8, 0)


class Writer(Protocol):
    """What of the renderer's writer this module uses (``writer.Writer``)."""

    v: tuple[int, ...]

    def raw(self, role: str, text: str, rank: int = 0) -> None: ...


def write_refusal(w: Writer, model: str) -> None:
    """The API server's traceback for a model whose config.json cannot be had: vLLM's own message from 0.8, else
    transformers' OSError (the words ``unavailable`` reads back)."""
    w.raw("api", "Traceback (most recent call last):")
    frames = [("vllm/engine/arg_utils.py", "create_model_config", "return ModelConfig("),
              ("vllm/transformers_utils/config.py", "get_config", "raise ValueError(error_message) from e"
               if w.v >= OWN_MESSAGE_SINCE else "config_dict, _ = PretrainedConfig.get_config_dict(")]
    for path, function, code in frames:
        w.raw("api", f'  File "{_PACKAGES}/{path}", line {200 + len(function) * 5}, in {function}')
        w.raw("api", f"    {code}")
    if w.v >= OWN_MESSAGE_SINCE:
        lines = [f"ValueError: Invalid repository ID or local directory specified: '{model}'.",
                 "Please verify the following requirements:", "1. Provide a valid Hugging Face repository ID.",
                 "2. Specify a local directory that contains a recognized configuration file.",
                 "   - For Hugging Face models: ensure the presence of a 'config.json'.",
                 "   - For Mistral models: ensure the presence of a 'params.json'."]
    else:
        lines = [f"OSError: {model} is not a local folder and is not a valid model identifier listed on "
                 "'https://huggingface.co/models'",
                 "If this is a private repository, make sure to pass a token having permission to this repo either by "
                 "logging in with `huggingface-cli login` or by passing `token=<your_token>`"]
    for line in lines:
        w.raw("api", line)
