"""The traceback a rehearsal pod's vLLM ends in for a bare ``--hf-token`` with no token in the pod (``hub.bare_token``).

huggingface_hub's ``hf_hub_download`` builds its request headers first, and ``get_token_to_send(True)`` raises
``LocalTokenNotFoundError`` when it finds no token; transformers' ``cached_files`` re-raises it as it is (``raise e``),
so the traceback is one, unchained, and ends in huggingface_hub's own line. The frames below vLLM's are measured: a
real ``get_config_dict(..., token=True)`` and ``get_image_processor_config(..., token=True)`` with no token, under
transformers 4.57.1 / huggingface_hub 0.35.3 (vLLM up to 0.22) and 5.0.0 / 1.33.0 (from 0.23.0, ``hub_frames``).
vLLM's are read from each release's wheel: from 0.19.0 ``maybe_override_with_speculators`` (``hub_frames.CALLS``),
called by ``create_engine_config`` before any ModelConfig exists, so its frame there is that call (arg_utils.py@0.19.0
l.1539), not ``model_config = self.create_model_config()``; 0.8.5 to 0.18.0 ModelConfig's
``get_hf_image_processor_config`` (:data:`IMAGE_PROCESSOR`) under ``create_engine_config``'s
``self.create_model_config()`` (:data:`CREATE_MODEL_CONFIG`), where the dataclass's (and from 0.10 pydantic's)
``__init__`` frames between ``ModelConfig(`` and its body are left out. :func:`frames` gives them from
``create_engine_config`` down, so the pod's traceback carries them below ``run_server`` (``launch.Refusal.frames``).
"""

from __future__ import annotations

from vllm_remedy.hub import bare_token
from vllm_remedy.sim.vllm_pod import hub_frames

SITE = hub_frames.SITE
#: release -> (engine/arg_utils.py ``return ModelConfig(`` in create_model_config, the config module, the method and
#: line of ``self.hf_image_processor_config = get_hf_image_processor_config(``, transformers_utils/config.py's line of
#: ``return get_image_processor_config(``), read from each wheel (arg_utils.py@0.8.5 l.987, config.py@0.8.5 l.468 ...
#: arg_utils.py@0.18.0 l.1360, config/model.py@0.18.0 l.498, transformers_utils/config.py@0.18.0 l.1030)
IMAGE_PROCESSOR: dict[tuple[int, int, int], tuple[int, str, str, int, int]] = {
    (0, 8, 5): (987, "config.py", "__init__", 468, 753),
    (0, 9, 0): (875, "config.py", "__post_init__", 532, 775),
    (0, 9, 2): (956, "config.py", "__post_init__", 550, 819),
    (0, 10, 0): (872, "config.py", "__post_init__", 557, 730),
    (0, 10, 1): (904, "config/__init__.py", "__post_init__", 612, 804),
    (0, 10, 2): (963, "config/__init__.py", "__post_init__", 643, 898),
    (0, 11, 0): (994, "config/model.py", "__post_init__", 451, 929),
    (0, 12, 0): (1221, "config/model.py", "__post_init__", 516, 907),
    (0, 13, 0): (1189, "config/model.py", "__post_init__", 480, 961),
    (0, 14, 0): (1223, "config/model.py", "__post_init__", 495, 986),
    (0, 15, 0): (1228, "config/model.py", "__post_init__", 497, 979),
    (0, 16, 0): (1264, "config/model.py", "__post_init__", 494, 973),
    (0, 17, 0): (1329, "config/model.py", "__post_init__", 496, 979),
    (0, 18, 0): (1360, "config/model.py", "__post_init__", 498, 1030),
}
#: release -> engine/arg_utils.py's line of ``model_config = self.create_model_config()`` in create_engine_config, read
#: from each wheel (arg_utils.py@0.8.5 l.1099 ... @0.18.0 l.1508)
CREATE_MODEL_CONFIG: dict[tuple[int, int, int], int] = {
    (0, 8, 5): 1099, (0, 9, 0): 983, (0, 9, 2): 1067, (0, 10, 0): 1004, (0, 10, 1): 1057, (0, 10, 2): 1119,
    (0, 11, 0): 1142, (0, 12, 0): 1365, (0, 13, 0): 1332, (0, 14, 0): 1369, (0, 15, 0): 1374, (0, 16, 0): 1410,
    (0, 17, 0): 1477, (0, 18, 0): 1508,
}
#: transformers major -> (image_processing_auto.py get_image_processor_config's cached_file line and its text,
#: utils/hub.py cached_files' ``raise e`` line, its ``hf_hub_download(`` line): measured, see the module
TRANSFORMERS: dict[int, tuple[int, str, int, int]] = {
    4: (322, "resolved_config_file = cached_file(", 567, 479),
    5: (334, "resolved_processor_file = cached_file(", 507, 419),
}
_FN = "return fn(*args, **kwargs)"
#: transformers major -> huggingface_hub's frames from hf_hub_download to the raise (0.35.3 under 4, 1.33.0 under 5)
HUB: dict[int, tuple[tuple[str, int, str, str], ...]] = {
    4: (("utils/_validators.py", 114, "_inner_fn", _FN),
        ("file_download.py", 972, "hf_hub_download", "hf_headers = build_hf_headers("),
        ("utils/_deprecation.py", 101, "inner_f", "return f(*args, **kwargs)"),
        ("utils/_validators.py", 114, "_inner_fn", _FN),
        ("utils/_headers.py", 126, "build_hf_headers", "token_to_send = get_token_to_send(token)"),
        ("utils/_headers.py", 159, "get_token_to_send", "raise LocalTokenNotFoundError(")),
    5: (("utils/_validators.py", 89, "_inner_fn", _FN),
        ("utils/_http.py", 266, "_inner", _FN),
        ("file_download.py", 1017, "hf_hub_download", "hf_headers = build_hf_headers("),
        ("utils/_validators.py", 89, "_inner_fn", _FN),
        ("utils/_headers.py", 108, "build_hf_headers", "token_to_send = get_token_to_send(token)"),
        ("utils/_headers.py", 139, "get_token_to_send", "raise LocalTokenNotFoundError(")),
}
#: huggingface_hub's message (utils/_headers.py ``get_token_to_send``: 0.35.3 l.160-163, 1.33.0 l.140-143; releases
#: before 0.34 name ``huggingface-cli login`` instead, not the ones the rehearsal takes vLLM images to ship)
MESSAGE = ("huggingface_hub.errors.LocalTokenNotFoundError: Token is required (`token=True`), but no token found. You "
           "need to provide a token or be logged in to Hugging Face with `hf auth login` or `huggingface_hub.login`. "
           "See https://huggingface.co/settings/tokens.")


def frames(v: tuple[int, ...]) -> tuple[tuple[str, int, str, str], ...]:
    """The frames from ``create_engine_config`` down to huggingface_hub's raise at release ``v`` (0.8.5 on:
    ``bare_token.SINCE``): (path, line, function, code), as ``launch.Refusal.frames`` holds them."""
    major = 5 if tuple(v) >= hub_frames.TRANSFORMERS_5_SINCE else 4
    get, inner, cached, _ = hub_frames.TRANSFORMERS[major]
    processor, processor_call, reraised, download = TRANSFORMERS[major]
    engine = f"{SITE}/vllm/engine/arg_utils.py"
    out: list[tuple[str, int, str, str]] = []
    if tuple(v) >= bare_token.FIRST_SINCE:
        at, call, dict_at, dict_call = hub_frames.CALLS[max(r for r in hub_frames.CALLS if r <= tuple(v))]
        out += [(engine, at, "create_engine_config", call),
                (f"{SITE}/vllm/transformers_utils/config.py", dict_at, "maybe_override_with_speculators", dict_call),
                (f"{SITE}/transformers/configuration_utils.py", get, "get_config_dict",
                 "config_dict, kwargs = cls._get_config_dict(pretrained_model_name_or_path, **kwargs)"),
                (f"{SITE}/transformers/configuration_utils.py", inner, "_get_config_dict",
                 "resolved_config_file = cached_file(")]
    else:
        model_at, module, method, at, call_at = IMAGE_PROCESSOR[max(r for r in IMAGE_PROCESSOR if r <= tuple(v))]
        created = CREATE_MODEL_CONFIG[max(r for r in CREATE_MODEL_CONFIG if r <= tuple(v))]
        out += [(engine, created, "create_engine_config", "model_config = self.create_model_config()"),
                (engine, model_at, "create_model_config", "return ModelConfig("),
                (f"{SITE}/vllm/{module}", at, method,
                 "self.hf_image_processor_config = get_hf_image_processor_config("),
                (f"{SITE}/vllm/transformers_utils/config.py", call_at, "get_hf_image_processor_config",
                 "return get_image_processor_config("),
                (f"{SITE}/transformers/models/auto/image_processing_auto.py", processor, "get_image_processor_config",
                 processor_call)]
    out += [(f"{SITE}/transformers/utils/hub.py", cached, "cached_file",
             "file = cached_files(path_or_repo_id=path_or_repo_id, filenames=[filename], **kwargs)"),
            (f"{SITE}/transformers/utils/hub.py", reraised, "cached_files", "raise e"),
            (f"{SITE}/transformers/utils/hub.py", download, "cached_files", "hf_hub_download("),
            *((f"{SITE}/huggingface_hub/{path}", line, function, code) for path, line, function, code in HUB[major])]
    return tuple(out)
