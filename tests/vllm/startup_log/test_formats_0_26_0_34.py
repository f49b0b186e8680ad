"""Startup-log formats of vLLM 0.26-0.34, each pinned to the release that changed it (read from the PyPI sdists; the
citation is file@version inside the vllm package). Real lines come from the calibration cases' log_excerpt (their
source URL is in the YAML); lines marked CONSTRUCTED are built from the format string of the cited release."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vllm_remedy.vllm.log_formats import TEMPLATES, compiled, field_specs, fill, parse_version, templates_for
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.vllm.startup_log import parse_startup_log, render_startup_log
from vllm_remedy.vllm.startup_log.parse import parse_kv_advice

CAL = Path(__file__).resolve().parents[2] / "data" / "calibration"
BASE = dict(model="Qwen/Qwen3-8B", weights_gib=15.27, kv_cache_gib=4.92, kv_cache_tokens=35792, gpu_blocks=2237,
            max_concurrency=4.37, max_model_len=8192, cudagraph_gib=0.56, total_gpu_gib=23.52,
            gpu_memory_utilization=0.92, activation_gib=1.18, non_torch_gib=0.27)


def _excerpt(name: str) -> str:
    return yaml.safe_load((CAL / name).read_text())["log_excerpt"]


def _line(text: str, marker: str) -> str:
    return next(line for line in text.splitlines() if marker in line)


# --- the merged KV size / concurrency line: 0.28.0, not 0.30.0 -----------------------------------------------------

def test_real_0_28_merged_line():
    """Real: rtx5090-v0.28.0-qwen3-14b-awq-32k-u0.70 (Drolsey/syslab-server docs/models.md)."""
    r = parse_startup_log(_excerpt("rtx5090-v0.28.0-qwen3-14b-awq-32k-u0.70.yaml"))
    assert (r.kv_cache_gib, r.kv_cache_tokens, r.max_concurrency, r.concurrency_max_len) == (9.27, 60768, 1.85, 32768)


def test_real_0_27_1_still_two_lines():
    """Real: rtx4090-v0.27.1-qwen3-8b-8k-cold-compile (kv_cache_utils.py@0.27.1 logs size and concurrency apart)."""
    text = _excerpt("rtx4090-v0.27.1-qwen3-8b-8k-cold-compile.yaml")
    assert _line(text, "KV cache size").endswith("GPU KV cache size: 35,792 tokens")
    r = parse_startup_log(text)
    assert (r.kv_cache_tokens, r.max_concurrency, r.concurrency_max_len) == (35792, 4.37, 8192)


@pytest.mark.parametrize(("version", "merged"), [("0.27.1", False), ("0.28.0", True), ("0.29.0", True)])
def test_rendered_merge_boundary(version, merged):
    """update_kv_cache_capacity, v1/core/kv_cache_utils.py@0.28.0: one logger call for both figures."""
    text = render_startup_log(version, **BASE)
    one = "GPU KV cache size: 35,792 tokens, Maximum concurrency for 8,192 tokens per request: 4.37x"
    assert (one in text) is merged
    r = parse_startup_log(text)
    assert (r.kv_cache_tokens, r.max_concurrency) == (35792, 4.37)


@pytest.mark.parametrize("line", [
    # Real: t4-v0.30.0-qwen2.5-1.5b-4k-u0.85 (eslam-ahmed43/llm-lab logs/vllm_server.log).
    "(EngineCore pid=691) INFO 10-01 22:41:34 [kv_cache_utils.py:2395] GPU KV cache size: 324,704 tokens, Maximum "
    "concurrency for 4,096 tokens per request: 79.27x",
    # CONSTRUCTED from kv_cache_utils.py@0.30.0 (device word: device_type.upper() off CUDA).
    "INFO 10-01 22:41:34 [kv_cache_utils.py:2395] XPU KV cache size: 324,704 tokens, Maximum concurrency for 4,096 "
    "tokens per request: 79.27x",
    # CONSTRUCTED from kv_cache_utils.py@0.32.0 (" + host" with a HiSparse host pool).
    "INFO 10-01 22:41:34 [kv_cache_utils.py:2328] GPU + host KV cache size: 324,704 tokens, Maximum concurrency for "
    "4,096 tokens per request: 79.27x",
])
def test_device_word_forms(line):
    r = parse_startup_log(line)
    assert (r.kv_cache_tokens, r.max_concurrency, r.concurrency_max_len) == (324704, 79.27, 4096)


# --- the post-start advisory -----------------------------------------------------------------------------------------

def test_real_three_figure_advisory_each_figure():
    """Real: t4-v0.30.0 (3-figure form, gpu_worker.py@0.27.0 on). Its peak activation (0.46) includes the applied
    graph estimate (0.34 GiB, the log's own "(estimated)" line): the parser keeps it apart from activation_gib."""
    text = _excerpt("t4-v0.30.0-qwen2.5-1.5b-4k-u0.85.yaml")
    r = parse_startup_log(text)
    assert (r.free_at_start_gib, r.total_gpu_gib, r.gpu_memory_utilization) == (14.46, 14.56, 0.85)
    assert (r.consumed_gib, r.peak_activation_gib, r.cudagraph_gib, r.activation_gib) == (3.24, 0.46, 0.15, None)
    (a,) = parse_kv_advice(text)
    assert (a.fit_bytes, a.full_bytes, a.in_use_gib) == (8993561908, 11228998144, 8.67)
    # Real: a100-v0.26.1rc1 (LukeJYK/AutoScientists vllm.log): a 0.26.1 dev build already prints the 3-figure form.
    dev = parse_startup_log(_excerpt("a100-v0.26.1rc1-qwen3-coder-30b-a3b-128k.yaml"))
    assert (dev.consumed_gib, dev.peak_activation_gib, dev.free_at_start_gib) == (57.26, 0.23, 78.84)


@pytest.mark.parametrize(("version", "level", "form"), [
    ("0.25.1", None, None), ("0.26.0", "INFO", "for weight,"), ("0.27.0", "INFO", "for consumed memory"),
    ("0.33.0", "INFO", "for consumed memory"), ("0.34.0", "INFO", "for consumed memory")])
def test_rendered_advisory_by_release(version, level, form):
    """DEBUG through 0.25.x (gpu_worker.py@0.25.1 logger.debug, so not in an INFO log), INFO from 0.26.0
    (gpu_worker.py@0.26.0), one consumed figure from 0.27.0 (gpu_worker.py@0.27.0)."""
    text = render_startup_log(version, free_at_start_gib=22.64, **BASE)
    lines = [line for line in text.splitlines() if "Actual usage is" in line]
    if level is None:
        assert lines == []
        return
    assert f" {level} " in lines[0] and form in lines[0]
    r = parse_startup_log(text)
    assert r.free_at_start_gib == 22.64
    if form == "for consumed memory":
        assert (r.consumed_gib, r.peak_activation_gib) == (15.54, 1.18)
    else:
        assert (r.activation_gib, r.non_torch_gib) == (1.18, 0.27)


# --- Model Runner V2 -------------------------------------------------------------------------------------------------

def test_real_mrv2_weights_forms():
    """Real: 'GiB and' (t4x2-v0.22.0, rtx4090-v0.27.1) and 'GiB memory and' (a100-40gb-v0.31.0) of
    v1/worker/gpu/model_runner.py; 'Using V2 Model Runner' (gpu_worker.py) in both."""
    old = parse_startup_log(_excerpt("t4x2-v0.22.0-qwen3-8b-tp2-fp16-8k-eager-u0.85.yaml"))
    new = parse_startup_log(_excerpt("a100-40gb-v0.31.0-qwen2.5-coder-1.5b-fp16-16k.yaml"))
    assert (old.weights_gib, old.runner, new.weights_gib, new.runner) == (7.64, "v2", 2.98, "v2")
    # 0.31's profile-time capture logs 0.30 GiB before the KV cache is sized; the advisory's actual capture is 0.2.
    assert new.cudagraph_gib == 0.2
    assert parse_startup_log(_excerpt("rtx4090-v0.27.1-qwen3-8b-8k-warm-compile.yaml")).weights_gib == 15.27


@pytest.mark.parametrize(("version", "words", "announced"), [
    ("0.22.0", "GiB and", True), ("0.27.1", "GiB and", True), ("0.28.0", "GiB memory and", True),
    ("0.33.0", "GiB memory and", True), ("0.34.0", "GiB memory and", False)])
def test_rendered_mrv2(version, words, announced):
    """model_runner.py@0.21.0-@0.27.1 'GiB and', @0.28.0 'GiB memory and'; the announcement is gone @0.34.0."""
    text = render_startup_log(version, runner_v2=True, **BASE)
    assert "[model_runner.py:" in _line(text, "Model loading took")
    assert f"Model loading took 15.27 {words} " in text
    assert ("Using V2 Model Runner" in text) is announced
    assert parse_startup_log(text).weights_gib == 15.27


def test_sampler_warmup_error_is_v1_runner_only():
    """'warming up sampler' exists only in v1/worker/gpu_model_runner.py (not gpu/model_runner.py, @0.31.0)."""
    assert not templates_for("err_sampler", parse_version("0.31.0"), "v1", "v2")
    with pytest.raises(ValueError):
        render_startup_log("0.31.0", runner_v2=True, failure=Failure.SAMPLER_WARMUP_OOM, **BASE)


# --- auto-fit --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("version", "line"), [
    # CONSTRUCTED from kv_cache_utils.py@0.31.0.
    ("0.31.0", "Auto-fit max_model_len: reduced from 40960 to 8192 to fit in available GPU memory (4.92 GiB available "
               "for KV cache)"),
    # CONSTRUCTED from kv_cache_utils.py@0.32.0.
    ("0.32.0", "Auto-fit max_model_len: reduced from 40960 to 8192 to fit in available KV cache memory (4.92 GiB GPU)"),
    # CONSTRUCTED from kv_cache_planning.py@0.34.0 (tentative, then kept after warmup).
    ("0.34.0", "Auto-fit max_model_len: reduced from 40960 to 8192 to fit in available KV cache memory (4.92 GiB GPU); "
               "the final length is set after CUDA graph capture and warmup"),
])
def test_rendered_auto_fit(version, line):
    text = render_startup_log(version, max_model_len_arg=-1, derived_max_model_len=40960, **BASE)
    assert line in text
    assert "max_seq_len=40960," in text  # the config line's length before auto-fit (config/model.py@0.30.0)
    assert parse_startup_log(text).max_model_len == 8192
    if version == "0.34.0":
        assert ("Auto-fit max_model_len: using max_model_len=8192, which fits in the KV cache memory left after CUDA "
                "graph capture and warmup (4.92 GiB GPU).") in text


def test_auto_fit_last_line_decides_the_length():
    """CONSTRUCTED from kv_cache_planning.py@0.34.0: the after-warmup refit shortens the tentative length; the
    engine's config line still shows the model's own length."""
    text = "\n".join([
        "INFO 12-01 10:00:00 [core.py:129] Initializing a V1 LLM engine (v0.34.0) with config: model='m', "
        "max_seq_len=40960, tensor_parallel_size=1",
        "INFO 12-01 10:00:05 [kv_cache_planning.py:1479] Auto-fit max_model_len: reduced from 40960 to 12000 to fit in "
        "available KV cache memory (6.1 GiB GPU); the final length is set after CUDA graph capture and warmup",
        "INFO 12-01 10:00:09 [kv_cache_planning.py:1494] --max-model-len auto reduced max_model_len from 12000 to 9000 "
        "(4.92 GiB GPU left for the KV cache after CUDA graph capture and warmup)."])
    assert parse_startup_log(text).max_model_len == 9000


# --- 0.34's extensible KV cache --------------------------------------------------------------------------------------

def test_extensible_kv_size_is_the_committed_one():
    """CONSTRUCTED from v1/worker/extensible_kv_cache.py@0.34.0: 'Available KV cache memory' is the reserved capacity;
    the size comes from 'Extended KV cache to N blocks (F GiB).' after 'Memory after warmup: ...'."""
    text = "\n".join([
        "INFO 12-01 10:00:03 [gpu_worker.py:796] Available KV cache memory: 63.9 GiB",
        "INFO 12-01 10:00:20 [extensible_kv_cache.py:693] Memory after warmup: 61.2 GiB free, 0.05 GiB committed to "
        "the KV cache, 1.2 GiB kept for transient activations (1.2 GiB allocated at peak, 0.31 GiB of torch "
        "reservation growth); 3712 KV cache blocks (58.0 GiB) fit within the requested 79.19 GiB. Torch may reserve "
        "up to 18.4 GiB.",
        "INFO 12-01 10:00:20 [kv_cache_utils.py:1168] GPU KV cache size: 950,272 tokens, Maximum concurrency for "
        "32,768 tokens per request: 29.00x",
        "INFO 12-01 10:00:21 [extensible_kv_cache.py:536] Extended KV cache to 3712 blocks (58.00 GiB)."])
    r = parse_startup_log(text)
    assert (r.kv_cache_gib, r.kv_reserved_gib, r.gpu_blocks, r.kv_cache_tokens) == (58.0, 63.9, 3712, 950272)
    # Without the commit line (a log cut after the measurement) the measured size still beats the capacity.
    cut = parse_startup_log("\n".join(text.splitlines()[:2]))
    assert (cut.kv_cache_gib, cut.kv_reserved_gib) == (58.0, 63.9)


def test_rendered_0_34_order():
    """Capacity, capture, advisory, measurement, size (engine, finalize_extensible_kv_cache), commit (workers,
    extend_kv_cache): v1/engine/core.py@0.34.0 logs the capacity line before it asks the workers to extend."""
    text = render_startup_log("0.34.0", **{**BASE, "gpu_memory_utilization": 1.0})
    order = ["Available KV cache memory", "Graph capturing finished", "Actual usage is", "Memory after warmup",
             "KV cache size:", "Extended KV cache to 2237 blocks (4.92 GiB)."]
    at = [next(i for i, line in enumerate(text.splitlines()) if m in line) for m in order]
    assert at == sorted(at)
    r = parse_startup_log(text)
    assert r.kv_cache_gib == 4.92 and r.kv_reserved_gib is not None and r.kv_reserved_gib >= 4.92


# --- 0.34 errors -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("util", "hint"), [
    (0.9, "The KV cache gets what is left after the model and its activations within `gpu_memory_utilization`=0.9;"),
    (1.0, "The extensible KV cache already takes all device memory left after the model and its activations;")])
def test_0_34_error_hints(util, hint):
    """v1/core/kv_cache_planning.py@0.34.0 _more_kv_cache_memory_hint in both KV errors."""
    base = {**BASE, "gpu_memory_utilization": util}
    detail = {"needed_gib": 6.0, "available_gib": 4.92, "suggested_max_model_len": 6000}
    no_cache = render_startup_log("0.34.0", failure=Failure.NO_CACHE_BLOCKS, **base)
    max_len = render_startup_log("0.34.0", failure=Failure.MAX_LEN_EXCEEDS_KV, failure_detail=detail, **base)
    assert "No available memory for the cache blocks. " + hint in no_cache
    assert "estimated maximum model length is 6000. " + hint in max_len
    assert "Decreasing `max_model_len` also reduces what is needed." in max_len
    r = parse_startup_log(max_len)
    assert (r.failure, r.failure_detail["needed_gib"], r.failure_detail["suggested_max_model_len"]) == (
        Failure.MAX_LEN_EXCEEDS_KV, 6.0, 6000)
    assert parse_startup_log(no_cache).failure is Failure.NO_CACHE_BLOCKS


def test_0_34_renders_no_free_memory_refusal():
    """v1/worker/utils.py@0.34.0: the check is skipped with the extensible KV cache (the default on CUDA)."""
    with pytest.raises(ValueError):
        render_startup_log("0.34.0", failure=Failure.FREE_MEMORY_BELOW_UTILIZATION, **BASE)
    assert render_startup_log("0.33.0", failure=Failure.FREE_MEMORY_BELOW_UTILIZATION, **BASE)


def test_every_template_renders_and_parses_itself():
    """The table's own round trip for every 0.26+ template (a format string that cannot read its own line is a typo)."""
    for tpl in TEMPLATES:
        if tpl.since < (0, 26, 0) or not tpl.parse:
            continue
        values = {"kv_device": "GPU", "kv_hint": "h", "device": "cuda:0"}
        for name, spec in field_specs(tpl).items():
            values.setdefault(name, 7 if spec in ("d", ",") else ("x" if spec == "s" else 1.25))
        assert compiled(tpl).search(fill(tpl, values)), tpl.text


# --- the rehearsal cluster's pods (sim/vllm_pod/timeline.py passes the runner, free memory and the model's length) ---

def _launch(image: str, *args: str):
    from vllm_remedy.sim.seed import make_node
    from vllm_remedy.sim.vllm_pod.launch import Launch, plan
    from vllm_remedy.vllm.cmdline import find_server

    c = {"name": "vllm", "image": image, "args": ["--model", "Qwen/Qwen2.5-7B-Instruct", *args],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    node = make_node({"name": "n", "gpu": {"product": "NVIDIA-L40S", "count": 1}}, "t")
    got = plan(find_server({"containers": [c]}), c, node)
    assert isinstance(got, Launch)
    return got


@pytest.mark.parametrize("version", ["0.27.1", "0.30.0", "0.34.0"])
def test_rehearsal_pod_logs_the_release_formats(version):
    from datetime import datetime

    from vllm_remedy.sim.vllm_pod import timeline

    run = _launch(f"vllm/vllm-openai:v{version}", "--max-model-len", "-1")
    text = "\n".join(line.text for line in timeline.plan_start(run, datetime(2026, 1, 1)).lines)
    r = parse_startup_log(text)
    est = run.estimate
    assert r.runner == ("v2" if run.resolved.runner_v2 and version != "0.34.0" else None)
    assert (r.kv_cache_tokens, r.max_model_len) == (est.kv_cache_tokens, est.max_model_len)
    assert "Auto-fit max_model_len: " in text
    assert r.free_at_start_gib is not None and r.free_at_start_gib < run.gpu.total_gib
    assert ("Extended KV cache to" in text) is (version == "0.34.0")


def test_stage_of_a_profile_time_capture():
    """Real: a100-40gb-v0.31.0 (ReidHarris/sql-agent-rl vllm.log). Model Runner V2 logs 'Graph capturing finished'
    while profiling (gpu/cudagraph_utils.py@0.29.0), before the KV budget: a log cut there is still profiling."""
    from vllm_remedy.vllm.startup_log.stage import GRAPHS, PROFILING, startup_stage

    lines = _excerpt("a100-40gb-v0.31.0-qwen2.5-coder-1.5b-fp16-16k.yaml").splitlines()
    cut = next(i for i, line in enumerate(lines) if "Graph capturing finished" in line) + 1
    assert startup_stage("\n".join(lines[:cut])).stage == PROFILING
    sized = next(i for i, line in enumerate(lines) if "KV cache size" in line) + 1
    assert startup_stage("\n".join(lines[:sized])).stage == GRAPHS
