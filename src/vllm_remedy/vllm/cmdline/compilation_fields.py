"""The keys ``CompilationConfig`` takes, per release, from the first release that refuses any other (0.13.0).

``CompilationConfig`` is a pydantic dataclass; 0.13.0-0.15.0 declare ``extra="forbid"`` on it and from 0.16.0 the
``config`` decorator forbids extra fields by default (config/utils.py@0.16.0), so a key it lacks (``max_capture_size``,
an init=False field; ``level`` from 0.18.0) fails ``parse_dataclass``'s ``validate_json`` at argument parsing as
``Unexpected keyword argument``. Up to 0.12.0 unknown keys were ignored. Each row: the first release read with that set
of init fields (config/compilation.py of every release 0.13.0-0.34.0, class-level annotated fields without
``init=False``).
"""

from __future__ import annotations

from dataclasses import field, make_dataclass
from functools import cache
from typing import Any

Version = tuple[int, int, int]
FORBID_SINCE: Version = (0, 13, 0)
ROWS: tuple[tuple[Version, tuple[str, ...]], ...] = (
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


def fields(v: Version) -> frozenset[str] | None:
    """The keys release ``v``'s CompilationConfig takes; None where unknown keys are ignored (before 0.13.0)."""
    if v < FORBID_SINCE:
        return None
    row = next(text for since, text in reversed(ROWS) if v >= since)
    return frozenset("".join(row).split())


def unexpected(text: str, v: Version) -> str | None:
    """pydantic's words for the keys of JSON object ``text`` release ``v`` does not take (``N validation error(s) for
    CompilationConfig`` and, per key, ``Unexpected keyword argument [type=unexpected_keyword_argument, ...]``), without
    the version-specific documentation URL; None when every key is taken or nothing is judged."""
    known = fields(v)
    if known is None:
        return None
    from pydantic import TypeAdapter, ValidationError
    try:
        TypeAdapter(_model(known)).validate_json(text)
    except ValidationError as exc:
        bad = [e for e in exc.errors() if e["type"] == "unexpected_keyword_argument"]
        if not bad:
            return None
        lines = str(exc).splitlines()
        head = f"{len(bad)} validation error{'s' if len(bad) > 1 else ''} for CompilationConfig"
        return "\n".join([head, *(line for line in lines[1:] if not line.lstrip().startswith("For further"))])
    return None


@cache
def _model(known: frozenset[str]) -> Any:
    """A pydantic dataclass named CompilationConfig with these keys (any value) and extra keys forbidden."""
    from pydantic import ConfigDict
    from pydantic.dataclasses import dataclass
    cls = make_dataclass("CompilationConfig", [(k, Any, field(default=None)) for k in sorted(known)])
    return dataclass(cls, config=ConfigDict(extra="forbid"))
