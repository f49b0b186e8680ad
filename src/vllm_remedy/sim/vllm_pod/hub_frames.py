"""The frames of the exception a rehearsal pod's vLLM ends in when transformers reads config.json first (0.11.0 on).

From 0.11.0 ``create_engine_config`` calls ``maybe_override_with_speculators``, which calls transformers'
``PretrainedConfig.get_config_dict`` (``PreTrainedConfig`` from 0.31.0) before any ModelConfig exists; transformers'
``cached_files`` raises the ``OSError`` the log ends in. Python prints that exception's traceback after "The above
exception was the direct cause of the following exception:", so these frames belong there, below the entry point's.

vLLM's lines are read from the released wheels (engine/arg_utils.py and transformers_utils/config.py of each release:
:data:`CALLS`). transformers' are measured on the releases the rehearsal takes vLLM to ship (``hub_refusal``: 4.57.1
up to 0.22, 5.0.0 from 0.23.0), from a real ``get_config_dict`` traceback against tests/fixtures/hf_hub_server:
configuration_utils.py ``get_config_dict`` → ``_get_config_dict`` → utils/hub.py ``cached_file`` → ``cached_files``,
whose ``raise OSError(`` line depends on what the Hub said (:data:`TRANSFORMERS`).
"""

from __future__ import annotations

from vllm_remedy.sim.vllm_pod import refusal_frames

SITE = "/usr/local/lib/python3.12/dist-packages"
#: release -> (arg_utils.py line of the maybe_override_with_speculators call and its text, transformers_utils/config.py
#: line of get_config_dict in it and its text), read from each wheel (arg_utils.py@0.11.0 l.1135, config.py@0.11.0
#: l.501 ... arg_utils.py@0.34.0 l.2303, config.py@0.34.0 l.864)
_CALL = "maybe_override_with_speculators("
_DICT = "config_dict, _ = PretrainedConfig.get_config_dict("
_DICT5 = "config_dict, _ = PreTrainedConfig.get_config_dict("  # transformers 5's spelling, in vLLM from 0.31.0
CALLS: dict[tuple[int, int, int], tuple[int, str, int, str]] = {
    (0, 11, 0): (1135, f"self.speculative_config) = {_CALL}", 501, _DICT),
    (0, 12, 0): (1356, _CALL, 477, _DICT), (0, 13, 0): (1323, _CALL, 508, _DICT),
    (0, 14, 0): (1360, _CALL, 528, _DICT), (0, 15, 0): (1365, _CALL, 524, _DICT),
    (0, 16, 0): (1401, _CALL, 514, _DICT), (0, 17, 0): (1468, _CALL, 520, _DICT),
    (0, 18, 0): (1499, _CALL, 572, _DICT), (0, 19, 0): (1539, _CALL, 583, _DICT),
    (0, 20, 0): (1617, _CALL, 598, _DICT), (0, 21, 0): (1659, _CALL, 623, _DICT),
    (0, 22, 0): (1720, _CALL, 624, _DICT), (0, 23, 0): (1725, _CALL, 660, _DICT),
    (0, 24, 0): (1807, _CALL, 624, _DICT), (0, 25, 0): (1841, _CALL, 625, _DICT),
    (0, 26, 0): (1870, _CALL, 659, _DICT), (0, 27, 0): (1919, _CALL, 653, _DICT),
    (0, 28, 0): (1959, _CALL, 658, _DICT), (0, 29, 0): (2043, _CALL, 655, _DICT),
    (0, 30, 0): (2063, _CALL, 722, _DICT), (0, 31, 0): (2173, _CALL, 814, _DICT5),
    (0, 32, 0): (2230, _CALL, 781, _DICT5), (0, 33, 0): (2270, _CALL, 831, _DICT5),
    (0, 34, 0): (2303, _CALL, 864, _DICT5),
}
#: transformers major -> (configuration_utils.py get_config_dict's and _get_config_dict's lines, utils/hub.py
#: cached_file's line, cached_files' ``raise OSError(`` line by what the Hub said, or "permission" for a cache it may
#: not write: ``hub_cache_denied``): transformers 4.57.1 and 5.0.0
TRANSFORMERS: dict[int, tuple[int, int, int, dict[str, int]]] = {
    4: (662, 721, 322, {"repository": 511, "revision": 518, "gated": 543, "unreachable": 553, "offline": 553,
                        "unauthorized": 563, "permission": 524}),
    5: (569, 624, 276, {"repository": 449, "revision": 456, "gated": 483, "unreachable": 493, "offline": 493,
                        "unauthorized": 503, "permission": 462}),
}
TRANSFORMERS_5_SINCE = (0, 23, 0)  # as hub_refusal.HTTPX_SINCE: transformers 5 over huggingface_hub 1.x


def outer(v: tuple[int, ...], kind: str) -> list[str]:
    """The traceback lines (``File ...`` and its code) of transformers' OSError for the Hub's ``kind`` of "no" at
    release ``v`` (0.11.0 on; empty before, where transformers is not asked first)."""
    known = [release for release in CALLS if release <= tuple(v)]
    if not known:
        return []
    at, call, dict_at, dict_call = CALLS[max(known)]
    get, inner, cached, raised = TRANSFORMERS[5 if tuple(v) >= TRANSFORMERS_5_SINCE else 4]
    frames = [*refusal_frames.frames("config")[:4],
              (f"{SITE}/vllm/engine/arg_utils.py", at, "create_engine_config", call),
              (f"{SITE}/vllm/transformers_utils/config.py", dict_at, "maybe_override_with_speculators", dict_call),
              (f"{SITE}/transformers/configuration_utils.py", get, "get_config_dict",
               "config_dict, kwargs = cls._get_config_dict(pretrained_model_name_or_path, **kwargs)"),
              (f"{SITE}/transformers/configuration_utils.py", inner, "_get_config_dict",
               "resolved_config_file = cached_file("),
              (f"{SITE}/transformers/utils/hub.py", cached, "cached_file",
               "file = cached_files(path_or_repo_id=path_or_repo_id, filenames=[filename], **kwargs)"),
              (f"{SITE}/transformers/utils/hub.py", raised.get(kind, raised["unreachable"]), "cached_files",
               "raise OSError(")]
    lines: list[str] = []
    for path, line, function, code in frames:
        lines += [f'  File "{path}", line {line}, in {function}', f"    {code}"]
    return lines
