"""What a rehearsal pod's vLLM prints when the Hub says no to its config.json, release by release.

vLLM does not say one thing for every Hub failure: which library asks first, and whether vLLM wraps the answer in its
own "Invalid repository ID" message, changed four times (read in the released wheels' transformers_utils):

- up to 0.6.0 ``get_config`` calls ``AutoConfig.from_pretrained`` directly (config.py@0.5.5, @0.6.0): transformers'
  ``cached_file`` turns each huggingface_hub error into its own ``OSError``;
- 0.6.1 to 0.7.2 ask ``huggingface_hub.file_exists`` first (``file_or_path_exists``, config.py@0.6.1, @0.6.6,
  @0.7.2), unwrapped: it re-raises ``GatedRepoError``, returns False for a revision the Hub lacks (so vLLM ends in
  "No supported config format found in <model>"), lets a 401 through, and offline ``get_config`` calls
  ``file_exists`` once more on purpose to raise ``OfflineModeIsEnabled``;
- 0.7.3 to 0.10.2 list the repository's files instead (vLLM's own ``file_exists`` over ``list_repo_files``,
  config.py@0.7.3, @0.8.5, @0.10.2): the tree API lists a gated repository's files to anyone since late 2024
  (huggingface/huggingface.js#945), so the gated "no" comes from transformers' download of config.json; a missing
  revision or a refused token is raised by the listing (that the tree API refuses a bad token as the resolve URL
  does is assumed, not seen in a log), bare at 0.7.3 and inside vLLM's "Invalid repository ID" from 0.8.0
  (config.py@0.8.0 ``raise ValueError(...) from e``);
  offline the listing is empty, which ends in "No supported config format found" (0.7.3), "Unsupported config
  format: ConfigFormat.AUTO" (0.8.0, 0.8.3) or "Could not detect config format" inside "Invalid repository ID"
  (0.8.5 on);
- from 0.11.0 ``create_engine_config`` reads config.json through transformers before anything else
  (``maybe_override_with_speculators``, arg_utils.py@0.11.0, @0.19.0, @0.34.0, ``local_files_only`` under
  HF_HUB_OFFLINE), so every Hub "no" is transformers' ``OSError`` (its utils/hub.py ``cached_files``).

A chained exception prints its cause first ("The above exception was the direct cause of the following exception"),
so the log carries huggingface_hub's own error (``GatedRepoError``, ``RevisionNotFoundError``, the 401) before the
wrapping one, as vLLM's does; ``vllm.startup_log.model_errors`` reads the most specific of them. The messages are the
libraries' (huggingface_hub's ``hf_raise_for_status``, transformers' ``cached_files``, vLLM's own); the frames above
them are the stage's (``refusal_frames``), and transformers' ``OSError`` from 0.11.0 carries its own call path
(``hub_frames``: ``maybe_override_with_speculators`` into transformers' ``cached_files``). The Request ID
huggingface_hub adds is left out: no Hub sent one here. A missing repository and a Hub that could not be asked (a
refused connection, no answer in time, a 5xx) follow the same paths, their words measured with transformers 4.57.1 /
huggingface_hub 0.35.3 and transformers 5.0.0 / huggingface_hub 1.33.0 against tests/fixtures/hf_hub_server.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from urllib.parse import urlsplit

from vllm_remedy.sim.vllm_pod import hub_frames
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version

#: What the rehearsal words per release (``hub.Unresolved.kind``); any other failure keeps ``no_model_error``.
#: "repository": the Hub has no such repository (or hides it); "unreachable": no connection, no answer in time, or a
#: 5xx (``hub_said``: ``hub.ask``'s "is unreachable (...)" / "did not answer ..." / "answered HTTP 5xx ...").
#: "entry": the repository (at that revision) answers but holds no config.json (``no_config``).
KINDS = ("gated", "revision", "offline", "unauthorized", "repository", "unreachable", "entry")
FILE_EXISTS_SINCE = (0, 6, 1)  # huggingface_hub.file_exists before the config is read (config.py@0.6.1)
LISTING_SINCE = (0, 7, 3)  # vLLM's file_exists over list_repo_files (config.py@0.7.3)
WRAPPED_SINCE = (0, 8, 0)  # except Exception -> "Invalid repository ID ..." from e (config.py@0.8.0)
DETECT_SINCE = (0, 8, 5)  # "Could not detect config format ..." raised inside that try (config.py@0.8.5)
TRANSFORMERS_FIRST_SINCE = (0, 11, 0)  # maybe_override_with_speculators before ModelConfig (arg_utils.py@0.11.0)
PYDANTIC_SINCE = (0, 9, 1)  # ModelConfig a pydantic dataclass (``registry``), its ValueErrors a ValidationError
#: transformers 5's spelling (``PreTrainedConfig``, config.py@0.23.0), so huggingface_hub 1.x over httpx, whose
#: HTTP errors read "Client error '401 Unauthorized' for url '...'" (measured with huggingface_hub 2.4)
HTTPX_SINCE = (0, 23, 0)
ERRORS_MODULE_SINCE = (0, 6, 3)  # huggingface_hub.errors (config.py@0.6.3 catches errors.OfflineModeIsEnabled)
BAD_CREDENTIALS = "Invalid credentials in Authorization header"
HIDDEN = "Invalid username or password."  # with the public Hub's 401 for a repository it does not show (hub.ask)
CAUSE = "\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):"


def words(version: str, model: str, revision: str | None, kind: str | None, hub: str | None,
          hub_said: str | None = None) -> str | None:
    """The exception lines the pod's release ends in for the Hub's ``kind`` of "no" (None: not one of :data:`KINDS`,
    the caller keeps the generic refusal); ``hub`` is the endpoint the pod asked (its HF_ENDPOINT), ``hub_said`` the
    Hub's own message. A refused token is 401 "Invalid credentials in Authorization header", which huggingface_hub
    raises as a plain HTTP error; a repository the Hub does not show (missing, or private without a token) is 404, or
    on the public Hub 401 "Invalid username or password.", which it reads as RepositoryNotFoundError
    (``hf_raise_for_status``; vast-ai/base-image#128 shows the latter from a recent vLLM for an id that never
    existed)."""
    if kind not in KINDS:
        return None
    v = parse_version(version) or NEWEST_RELEASE
    hub = (hub or "https://huggingface.co").rstrip("/")
    rev = revision or "main"
    if kind == "repository" or (kind == "unauthorized" and hub_said and hub_said != BAD_CREDENTIALS):
        return _not_shown(v, model, rev, hub, hub_said if hub_said == HIDDEN or kind == "unauthorized" else None)
    if kind == "unreachable":
        return _unreachable(v, model, rev, hub, hub_said or "")
    if kind == "entry":
        return no_config(v, model)
    resolve = f"{hub}/{model}/resolve/{rev}/config.json"
    tree = f"{hub}/api/models/{model}/tree/{rev}?recursive=False&expand=False"  # list_repo_files' request
    module = "huggingface_hub.errors" if v >= ERRORS_MODULE_SINCE else "huggingface_hub.utils._errors"
    if v >= TRANSFORMERS_FIRST_SINCE or v < FILE_EXISTS_SINCE:
        return _transformers(v, model, rev, kind, hub, resolve, module)
    if v < LISTING_SINCE:  # huggingface_hub.file_exists: a HEAD of the resolve URL
        if kind == "gated":
            return _gated(module, resolve, model)
        if kind == "unauthorized":
            return _unauthorized(v, module, resolve)
        if kind == "offline":
            return (f"{module}.OfflineModeIsEnabled: Cannot reach {resolve}: offline mode is enabled. To disable it, "
                    "please unset the `HF_HUB_OFFLINE` environment variable.")
        return f"ValueError: No supported config format found in {model}"  # file_exists said False for both files
    if kind == "gated":  # the listing passed: transformers' download of config.json is refused
        return _transformers(v, model, rev, kind, hub, resolve, module)
    if kind == "offline":
        if v < WRAPPED_SINCE:
            return f"ValueError: No supported config format found in {model}."
        if v < DETECT_SINCE:
            return "ValueError: Unsupported config format: ConfigFormat.AUTO"
        return _invalid(v, model, f"ValueError: {_detect(v)}")
    cause = (_unauthorized(v, module, tree) if kind == "unauthorized" else
             f"{module}.RevisionNotFoundError: 404 Client Error.\n\nRevision Not Found for url: {tree}.\n"
             f"Invalid rev id: {rev}")
    return cause if v < WRAPPED_SINCE else _invalid(v, model, cause)


def _not_shown(v: tuple[int, ...], model: str, rev: str, hub: str, said: str | None) -> str:
    """A repository the Hub does not show (404), or a 401 huggingface_hub reads as RepositoryNotFoundError (``said``:
    the Hub's own line), through the release's path: ``file_exists`` says False (0.6.1-0.7.2: "No supported config
    format"), the listing raises it (0.7.3-0.10.2), transformers words it as an unknown model (up to 0.6.0 and from
    0.11.0; its text measured with transformers 4.57.1 / huggingface_hub 0.35.3 and 5.0.0 / 1.33.0 against
    tests/fixtures/hf_hub_server, the latter's longer "your token has the required permissions")."""
    module = "huggingface_hub.errors" if v >= ERRORS_MODULE_SINCE else "huggingface_hub.utils._errors"
    if FILE_EXISTS_SINCE <= v < LISTING_SINCE:
        return f"ValueError: No supported config format found in {model}"
    transformers_first = v >= TRANSFORMERS_FIRST_SINCE or v < FILE_EXISTS_SINCE
    url = (f"{hub}/{model}/resolve/{rev}/config.json" if transformers_first else
           f"{hub}/api/models/{model}/tree/{rev}?recursive=False&expand=False")
    how = ("make sure you are authenticated and your token has the required permissions.\nFor more details, see "
           if v >= HTTPX_SINCE else "make sure you are authenticated. For more details, see ")
    cause = (f"{module}.RepositoryNotFoundError: {401 if said else 404} Client Error.\n\nRepository Not Found for url: "
             f"{url}.\nPlease make sure you specified the correct `repo_id` and `repo_type`.\nIf you are trying to "
             f"access a private or gated repo, {how}https://huggingface.co/docs/huggingface_hub/authentication"
             + (f"\n{said}" if said else ""))
    if not transformers_first:
        return cause if v < WRAPPED_SINCE else _invalid(v, model, cause)
    # transformers' words for the login command: `hf auth login` in 4.57.1 and 5.0.0 (utils/hub.py@4.57.1 l.514,
    # @5.0.0 l.452), the releases taken from 0.11.0; `huggingface-cli login` in the transformers of 0.6.0 and before
    login = "hf auth login" if v >= TRANSFORMERS_FIRST_SINCE else "huggingface-cli login"
    return (f"{cause}\n{CAUSE}{_outer(v, 'repository')}\nOSError: {model} is not a local folder and is not a valid "
            "model identifier listed on 'https://huggingface.co/models'\nIf this is a private repository, make sure to "
            f"pass a token having permission to this repo either by logging in with `{login}` or by passing "
            "`token=<your_token>`")


#: huggingface_hub's error when hf_hub_download's HEAD failed for want of a Hub (no answer, no connection, a 5xx) and
#: nothing is cached (file_download.py ``_raise_on_head_call_error``; measured with huggingface_hub 0.35.3 and 1.33.0)
NO_HUB = ("LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub and we cannot find "
          "the requested files in the local cache. Please check your connection and try again or make sure your "
          "Internet connection is on.")
_ERRNO = {"Connection refused": 111, "No route to host": 113, "Network is unreachable": 101,
          "Connection timed out": 110, "Name or service not known": -2}


def _unreachable(v: tuple[int, ...], model: str, rev: str, hub: str, why: str) -> str:
    """No Hub to ask (``why``: ``hub.ask``'s words): where transformers reads config.json first, the HTTP stack's
    error, huggingface_hub's :data:`NO_HUB` and transformers' "We couldn't connect" (measured, see the module); at
    0.6.1-0.7.2 ``file_exists`` lets the HTTP error through bare; 0.7.3-0.10.2 the listing raises it, inside vLLM's
    own message from 0.8.0. vLLM's ``with_retry`` logs the listing's error first, at ERROR, twice 2 s apart ("Error
    retrieving file list: <error>, retrying 1 of 2", then without the tail; config.py@0.7.3 l.91-105, @0.10.2
    l.265-281): those records are ``hub_retry``'s, placed before the traceback by ``timeline``."""
    transformers_first = v >= TRANSFORMERS_FIRST_SINCE or v < FILE_EXISTS_SINCE
    module = "huggingface_hub.errors" if v >= ERRORS_MODULE_SINCE else "huggingface_hub.utils._errors"
    url = (f"{hub}/api/models/{model}/tree/{rev}?recursive=False&expand=False"
           if LISTING_SINCE <= v < TRANSFORMERS_FIRST_SINCE else f"{hub}/{model}/resolve/{rev}/config.json")
    cause = _network(v, module, why, url, transformers_first)
    if transformers_first:
        return (f"{cause}\n{CAUSE}\n{module}.{NO_HUB}\n{CAUSE}{_outer(v, 'unreachable')}\n"
                f"OSError: {_could_not_connect(v, hub, model)}")
    return cause if v < WRAPPED_SINCE else _invalid(v, model, cause)


def _network(v: tuple[int, ...], module: str, why: str, url: str, transformers_first: bool) -> str:
    """The HTTP stack's own error for ``why``: a 5xx (huggingface_hub's HfHubHTTPError; hf_hub_download's HEAD
    through huggingface_hub 0.35's ``http_backoff`` raises requests' HTTPError itself), a refused connection or a
    read timeout (10 s: huggingface_hub's HF_HUB_ETAG_TIMEOUT), in requests' words, httpx's from :data:`HTTPX_SINCE`.
    The Request ID huggingface_hub appends to a requests error is left out, as above."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    pool = "HTTPSConnection" if parts.scheme == "https" else "HTTPConnection"
    path = url[len(f"{parts.scheme}://{parts.netloc}"):]
    httpx = v >= HTTPX_SINCE
    status = re.match(r"answered HTTP (\d+)(?: ([^(]*[^ (]))?", why)
    if status is not None:
        code = int(status[1])
        reason = status[2] or (HTTPStatus(code).phrase if code in HTTPStatus._value2member_map_ else "")
        if httpx:
            return (f"{module}.HfHubHTTPError: Server error '{code} {reason}' for url '{url}'\nFor more information "
                    f"check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/{code}")
        kind = "Server Error" if code >= 500 else "Client Error"
        raised = ("requests.exceptions.HTTPError" if transformers_first and v >= TRANSFORMERS_FIRST_SINCE else
                  f"{module}.HfHubHTTPError")
        return f"{raised}: {code} {kind}: {reason} for url: {url}"
    if "within" in why or "Timeout" in why:
        return ("httpx.ReadTimeout: timed out" if httpx else
                f"requests.exceptions.ReadTimeout: {pool}Pool(host='{host}', port={port}): Read timed out. "
                "(read timeout=10)")
    said = re.search(r"\(([^()]*)\)", why)
    strerror = said[1] if said is not None and ":" not in said[1] else "Connection refused"
    errno = f"[Errno {_ERRNO[strerror]}] " if strerror in _ERRNO else ""
    if httpx:
        return f"httpx.ConnectError: {errno}{strerror}"
    return (f"requests.exceptions.ConnectionError: {pool}Pool(host='{host}', port={port}): Max retries exceeded with "
            f"url: {path} (Caused by NewConnectionError(\"{pool}(host='{host}', port={port}): Failed to establish a "
            f"new connection: {errno}{strerror}\"))")


def _could_not_connect(v: tuple[int, ...], hub: str, model: str) -> str:
    """transformers' OSError for hf_hub_download's LocalEntryNotFoundError: cached_files' words (transformers 4.5x on,
    so from vLLM 0.11.0), cached_file's before."""
    if v >= TRANSFORMERS_FIRST_SINCE:
        return (f"We couldn't connect to '{hub}' to load the files, and couldn't find them in the cached files.\n"
                "Check your internet connection or see how to run the library in offline mode at "
                "'https://huggingface.co/docs/transformers/installation#offline-mode'.")
    return (f"We couldn't connect to '{hub}' to load this file, couldn't find it in the cached files and it looks "
            f"like {model} is not the path to a directory containing a file named config.json.\nCheckout your "
            "internet connection or see how to run the library in offline mode at "
            "'https://huggingface.co/docs/transformers/installation#offline-mode'.")


def _outer(v: tuple[int, ...], kind: str) -> str:
    """The frames of transformers' OSError (``hub_frames``), one per line after its "Traceback" header."""
    lines = hub_frames.outer(v, kind)
    return "\n" + "\n".join(lines) if lines else ""


def _gated(module: str, url: str, model: str) -> str:
    return (f"{module}.GatedRepoError: 401 Client Error.\n\nCannot access gated repo for url {url}.\n"
            f"Access to model {model} is restricted. You must have access to it and be authenticated to access it. "
            "Please log in.")


def _unauthorized(v: tuple[int, ...], module: str, url: str) -> str:
    """huggingface_hub's error for a token the Hub refuses: requests' words, httpx's from :data:`HTTPX_SINCE`."""
    said = (f"Client error '401 Unauthorized' for url '{url}'\nFor more information check: "
            "https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/401" if v >= HTTPX_SINCE else
            f"401 Client Error: Unauthorized for url: {url}")
    return f"{module}.HfHubHTTPError: {said}\n\n{BAD_CREDENTIALS}"


def _transformers(v: tuple[int, ...], model: str, rev: str, kind: str, hub: str, resolve: str, module: str) -> str:
    """transformers' ``OSError`` for hf_hub_download's error, after that error (its cause)."""
    if kind == "gated":
        cause = _gated(module, resolve, model)
        said = ("You are trying to access a gated repo.\nMake sure to have access to it at "
                f"https://huggingface.co/{model}.\n{cause.split(': ', 1)[1]}")
    elif kind == "revision":
        cause = f"{module}.RevisionNotFoundError: 404 Client Error.\n\nRevision Not Found for url: {resolve}.\n" \
                f"Invalid rev id: {rev}"
        said = (f"{rev} is not a valid git identifier (branch name, tag name or commit id) that exists for this model "
                f"name. Check the model page at 'https://huggingface.co/{model}' for available revisions.")
    elif kind == "unauthorized":
        cause = _unauthorized(v, module, resolve)
        said = f"There was a specific connection error when trying to load {model}:\n{cause.split(': ', 1)[1]}"
    else:  # offline, nothing cached: hf_hub_download's LocalEntryNotFoundError
        cause = (f"{module}.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and outgoing "
                 "traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to "
                 "False.")
        said = _could_not_connect(v, hub, model)
    return f"{cause}\n{CAUSE}{_outer(v, kind)}\nOSError: {said}"


def no_config(v: tuple[int, ...], model: str) -> str | None:
    """A repository that answers but has no config.json (nor params.json, which the Hub's answer does not say: a
    Mistral-format repository some releases would read is not modelled), as each release ends: vLLM's own format
    detection finds neither file, ``file_exists`` (0.6.1-0.7.2) or the listing (0.7.3 on) saying False for both
    (config.py@0.6.6, @0.7.3, @0.8.0, @0.8.5, @0.10.2). From 0.11.0 transformers reads config.json first
    (``maybe_override_with_speculators``), but ``PretrainedConfig.get_config_dict`` returns ``({}, {})`` for a Hub
    repository without config.json (``cached_files`` skips a missing config.json; measured with transformers 4.57.1
    and 5.0.0 against tests/fixtures/hf_hub_server), so vLLM's own detection still ends the start
    (transformers_utils/config.py@0.11.0 l.551-580, @0.34.0 l.935-967). From 0.9.1 ``get_config`` runs in the
    pydantic dataclass ModelConfig's ``__post_init__`` (config.py@0.9.2 l.27, l.533; config/model.py@0.34.0 l.697),
    and pydantic reports the ValueError as a ValidationError without its cause: the log holds vLLM's message alone
    (measured with pydantic 2.14: no "direct cause" section). None up to 0.6.0 (transformers' own words there not
    read here: the caller keeps the generic refusal)."""
    if v < FILE_EXISTS_SINCE:
        return None
    if v < LISTING_SINCE:
        return f"ValueError: No supported config format found in {model}"
    if v < WRAPPED_SINCE:
        return f"ValueError: No supported config format found in {model}."
    if v < DETECT_SINCE:
        return "ValueError: Unsupported config format: ConfigFormat.AUTO"
    if v < PYDANTIC_SINCE:
        return _invalid(v, model, f"ValueError: {_detect(v)}")
    said = _invalid(v, model, "").split(f"{CAUSE}\n", 1)[1].removeprefix("ValueError: ")
    kwargs = f"ArgsKwargs((), {{'model': '{model}', 'runner': 'auto', 'convert': 'auto', 'task': None, ...}})"
    return ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
            f"  Value error, {said}\n [type=value_error, input_value={kwargs[:25]}...{kwargs[-25:]}, "
            "input_type=ArgsKwargs]\n    For further information visit https://errors.pydantic.dev/2.11/v/value_error")


def _detect(v: tuple[int, ...]) -> str:
    """vLLM's "no config file" line (config.py@0.8.5, @0.10.2: the latter's words run together as released, spaced
    again from transformers_utils/config.py@0.11.0 l.560-564 to @0.34.0)."""
    if v >= TRANSFORMERS_FIRST_SINCE:
        return ("Could not detect config format for no config file found. With config_format 'auto', ensure your "
                "model has either config.json (HF format) or params.json (Mistral format). Otherwise please specify "
                "your_custom_config_format in engine args for customized config parser.")
    if v >= (0, 10, 2):
        return ("Could not detect config format for no config file found. With config_format 'auto', ensure your "
                "model has eitherconfig.json (HF format) or params.json (Mistral format).Otherwise please specify "
                "your_custom_config_formatin engine args for customized config parser")
    return ("Could not detect config format for no config file found. Ensure your model has either config.json (HF "
            "format) or params.json (Mistral format).")


def _invalid(v: tuple[int, ...], model: str, cause: str) -> str:
    """vLLM's own message (config.py@0.8.0; the GGUF item from 0.9.0 to 0.11.0, gone at
    transformers_utils/config.py@0.12.0) after the error it wraps."""
    lines = [f"ValueError: Invalid repository ID or local directory specified: '{model}'.",
             "Please verify the following requirements:", "1. Provide a valid Hugging Face repository ID.",
             "2. Specify a local directory that contains a recognized configuration file.",
             "   - For Hugging Face models: ensure the presence of a 'config.json'.",
             "   - For Mistral models: ensure the presence of a 'params.json'."]
    if (0, 9, 0) <= v < (0, 12, 0):
        lines += ["3. For GGUF: pass the local path of the GGUF checkpoint.",
                  "   Loading GGUF from a remote repo directly is not yet supported."]
    return "\n".join([cause, CAUSE, *lines])
