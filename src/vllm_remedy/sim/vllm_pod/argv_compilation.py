"""The rehearsal pod's own reading of ``--compilation-config`` keys: from 0.13.0 ``CompilationConfig`` forbids keys it
lacks (``extra="forbid"`` on the class 0.13.0-0.15.0, the ``config`` decorator's default from 0.16.0), so
``parse_dataclass`` refuses them at argument parsing (``Unexpected keyword argument``). Independent of the tools'
table; extracted from config/compilation.py of every release 0.13.0-0.34.0 (init fields of the class body), each row
the first release with that set. Before 0.13.0 unknown keys are ignored.
"""

from __future__ import annotations

import json
from typing import Any

Version = tuple[int, int, int]
FORBID_SINCE: Version = (0, 13, 0)
KEYS: tuple[tuple[Version, tuple[str, ...]], ...] = (
    ((0, 13, 0), (
        'level mode debug_dump_path cache_dir compile_cache_save_format backend custom_ops splitting_ops '
        'compile_mm_encoder compile_sizes compile_ranges_split_points inductor_compile_config inductor_passes '
        'cudagraph_mode cudagraph_num_of_warmups cudagraph_capture_sizes cudagraph_copy_inputs '
        'cudagraph_specialize_lora use_inductor_graph_partition pass_config max_cudagraph_capture_size '
        'dynamic_shapes_config'
    )),
    ((0, 16, 0), (
        'level mode debug_dump_path cache_dir compile_cache_save_format backend custom_ops splitting_ops '
        'compile_mm_encoder compile_sizes compile_ranges_split_points inductor_compile_config inductor_passes '
        'cudagraph_mode cudagraph_num_of_warmups cudagraph_capture_sizes cudagraph_copy_inputs '
        'cudagraph_specialize_lora use_inductor_graph_partition pass_config max_cudagraph_capture_size '
        'dynamic_shapes_config fast_moe_cold_start'
    )),
    ((0, 18, 0), (
        'mode debug_dump_path cache_dir compile_cache_save_format backend custom_ops splitting_ops '
        'compile_mm_encoder compile_sizes compile_ranges_endpoints inductor_compile_config inductor_passes '
        'cudagraph_mode cudagraph_num_of_warmups cudagraph_capture_sizes cudagraph_copy_inputs '
        'cudagraph_specialize_lora use_inductor_graph_partition pass_config max_cudagraph_capture_size '
        'dynamic_shapes_config fast_moe_cold_start'
    )),
    ((0, 19, 0), (
        'mode debug_dump_path cache_dir compile_cache_save_format backend custom_ops splitting_ops '
        'compile_mm_encoder cudagraph_mm_encoder encoder_cudagraph_token_budgets '
        'encoder_cudagraph_max_images_per_batch compile_sizes compile_ranges_endpoints '
        'inductor_compile_config inductor_passes cudagraph_mode cudagraph_num_of_warmups '
        'cudagraph_capture_sizes cudagraph_copy_inputs cudagraph_specialize_lora use_inductor_graph_partition '
        'pass_config max_cudagraph_capture_size dynamic_shapes_config fast_moe_cold_start'
    )),
    ((0, 20, 0), (
        'mode debug_dump_path cache_dir compile_cache_save_format backend custom_ops ir_enable_torch_wrap '
        'splitting_ops compile_mm_encoder cudagraph_mm_encoder encoder_cudagraph_token_budgets '
        'encoder_cudagraph_max_vision_items_per_batch encoder_cudagraph_max_frames_per_batch compile_sizes '
        'compile_ranges_endpoints inductor_compile_config inductor_passes cudagraph_mode '
        'cudagraph_num_of_warmups cudagraph_capture_sizes cudagraph_copy_inputs cudagraph_specialize_lora '
        'use_inductor_graph_partition pass_config max_cudagraph_capture_size dynamic_shapes_config '
        'fast_moe_cold_start'
    )),
    ((0, 32, 0), (
        'mode debug_dump_path cache_dir compile_cache_save_format backend custom_ops ir_enable_torch_wrap '
        'splitting_ops compile_mm_encoder cudagraph_mm_encoder encoder_cudagraph_token_budgets '
        'encoder_cudagraph_max_vision_items_per_batch encoder_cudagraph_max_frames_per_batch '
        'cudagraph_decoder_replay decoder_replay_cudagraph_capture_sizes decoder_replay_trim_threshold '
        'compile_sizes compile_ranges_endpoints inductor_compile_config inductor_passes cudagraph_mode '
        'cudagraph_num_of_warmups cudagraph_capture_sizes cudagraph_copy_inputs cudagraph_specialize_lora '
        'use_inductor_graph_partition pass_config max_cudagraph_capture_size dynamic_shapes_config '
        'fast_moe_cold_start'
    )),
    ((0, 34, 0), (
        'mode debug_dump_path cache_dir compile_cache_save_format backend custom_ops ir_enable_torch_wrap '
        'splitting_ops compile_mm_encoder cudagraph_mm_encoder encoder_cudagraph_token_budgets '
        'encoder_cudagraph_max_token_budget encoder_cudagraph_max_vision_items_per_batch '
        'encoder_cudagraph_max_frames_per_batch cudagraph_decoder_replay '
        'decoder_replay_cudagraph_capture_sizes decoder_replay_trim_threshold compile_sizes '
        'compile_ranges_endpoints inductor_compile_config inductor_passes cudagraph_mode '
        'use_breakable_cudagraph cudagraph_num_of_warmups cudagraph_capture_sizes '
        'prefill_cudagraph_capture_token_sizes max_prefill_cudagraph_capture_tokens '
        'decode_cudagraph_capture_request_sizes max_decode_cudagraph_capture_requests '
        'max_decode_cudagraph_capture_tokens cudagraph_copy_inputs cudagraph_specialize_lora '
        'use_inductor_graph_partition pass_config max_cudagraph_capture_size dynamic_shapes_config '
        'fast_moe_cold_start'
    )),
)


def unexpected(text: str, version: Version) -> str | None:
    """pydantic's error (after ``argument --compilation-config/-cc: ``) for the keys of JSON object ``text`` the release
    lacks; None when all are taken, the text is no JSON object, or the release ignores unknown keys."""
    if version < FORBID_SINCE:
        return None
    try:
        value: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    known = set("".join(next(k for since, k in reversed(KEYS) if version >= since)).split())
    bad = [(k, v) for k, v in value.items() if k not in known]
    if not bad:
        return None
    lines = [f"{len(bad)} validation error{'s' if len(bad) > 1 else ''} for CompilationConfig"]
    for key, val in bad:
        lines += [key, f"  Unexpected keyword argument [type=unexpected_keyword_argument, input_value={val!r}, "
                       f"input_type={type(val).__name__}]"]
    return "\n".join(lines)
