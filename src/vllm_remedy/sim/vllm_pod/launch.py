"""What a vLLM container is about to run: its flags, model, GPU and version, and the memory model's verdict.

Everything the simulator needs is decided here from objects only (pod spec, node), so the same inputs
always give the same start: that is what makes a rehearsal reproducible. ``reality`` then moves the KV cache
off the estimate by the model's measured error (``--reality exact`` keeps ``estimate()`` number for number).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.sim.vllm_pod import (
    adapters,
    argv,
    argv_added,
    argv_boolean,
    argv_options,
    config_order,
    config_splice,
    engine_select,
    entry_log,
    hf_config_flags,
    ray_v1,
    registry,
    scheduler,
    serve_model,
    unmodelled_start,
)
from vllm_remedy.sim.vllm_pod.launch_values import minus_one_without_auto_fit as _minus_one
from vllm_remedy.sim.vllm_pod.launch_values import typed as _typed
from vllm_remedy.sim.vllm_pod.launch_values import without_value as _without_value
from vllm_remedy.sim.vllm_pod.model_lookup import model_spec
from vllm_remedy.sim.vllm_pod.model_lookup import refused as _unfound
from vllm_remedy.sim.vllm_pod.node_card import gpu_limit, node_gpu, other_process_gib
from vllm_remedy.vllm import (
    dtype_support,
    engine_env,
    mla_env,
    model_len,
    quant_config,
    quant_support,
    rope_dispatch,
)
from vllm_remedy.vllm.catalog import GpuSpec, ModelSpec
from vllm_remedy.vllm.cmdline import ServerCommand, canonical_key
from vllm_remedy.vllm.cmdline.flags import Kind
from vllm_remedy.vllm.memory import EngineSettings, Estimate, Resolved, estimate, resolve
from vllm_remedy.vllm.memory.config_values import ConfigRefused
from vllm_remedy.vllm.outcomes import Outcome
from vllm_remedy.vllm.parallel import group_flags, local_engines, parallel_sizes, world_size
from vllm_remedy.vllm.startup_log import config_refusal
from vllm_remedy.vllm.versions import NEWEST_RELEASE, parse_version, rules, version_from_image


@dataclass(frozen=True)
class Launch:
    """A start the memory model can judge."""

    version: str  # as vLLM prints it ("0.8.5"); the newest modelled release for :latest and custom tags
    model_id: str
    served_name: str  # the metrics' model_name label (--served-model-name, else the model id)
    model: ModelSpec
    gpu: GpuSpec
    settings: EngineSettings
    resolved: Resolved
    estimate: Estimate  # what the card really gives (``reality``): the log, the load model and GPU memory use it
    predicted: Estimate | None = None  # the memory model's own figures, once ``reality`` has set the truth
    revision: str | None = None  # --revision, for the arguments line
    # --gpu-memory-utilization on the command line: vLLM lists it under "non-default args" only then
    utilization_set: bool = True
    # False when the image names no vLLM version (:latest, a digest): the log then says the newest rules were used
    version_named: bool = True
    # --tensor-parallel-size and --pipeline-parallel-size as the arguments set them, for the log's arguments and config
    # lines (``settings`` holds a multi-node group's TP × PP as its tensor-parallel split)
    parallel: tuple[int, int] = (1, 1)
    args_model: entry_log.Entries | None = None  # "non-default args"' model entries (``entry_log``)
    # options a release past the newest read may have added, taken unmodelled (``argv_added.unmodelled``), as argparse
    # spells them: the log names them
    unmodelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """A start that ends before the engine exists (unknown model, bad flag, no GPU): vLLM's exception."""

    version: str
    model_id: str
    error: str  # the exception line(s) as Python prints them; for "argparse", the usage and error lines
    # "argparse" (exit 2), "config" (argument/config validation), "device" (CUDA initialisation), "executor" (Ray
    # placing the workers) or "worker" (the engine core's worker building its model runner)
    stage: str
    version_named: bool = True  # as Launch.version_named
    # the frames below ``run_server`` that raise it, when this refusal has its own (``config_refusal``); else the
    # stage's (``refusal_frames.frames``)
    frames: tuple[tuple[str, int, str, str], ...] = ()
    # the pod's --max-model-len, --gpu-memory-utilization and --max-num-batched-tokens as typed (None: not set), for
    # "non-default args"
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: int | None = None
    # --tensor-parallel-size as typed (None: not set), for "non-default args" and the engine's config line
    tensor_parallel_size: int | None = None
    # what is logged before it raises, (seconds after the stage begins, level, message): Ray's wait for a placement
    # group (``config_order.ray_wait_logs``), the Hub listing's retries (``hub_retry``); the last is when it comes
    waits: tuple[tuple[float, str, str], ...] = ()
    waits_from: tuple[str, ...] = ()  # each wait's "file.py:N" (none: Ray's, ``ray_log_sources``)
    args_model: entry_log.Entries | None = None  # as Launch.args_model
    module: bool = False  # the OpenAI api_server module runs (its traceback starts in runpy: ``entry_log``)
    revision: str | None = None  # --revision and --max-num-seqs as typed, for "non-default args"
    max_num_seqs: int | None = None
    unmodelled: tuple[str, ...] = ()  # as Launch.unmodelled (not said once argparse or the CLI refused the start)


def image_version(image: str) -> str:
    """The vLLM version the image tag names; unknown tags (:latest) run the newest release known here."""
    return version_from_image(image) or ".".join(map(str, NEWEST_RELEASE))


def plan(cmd: ServerCommand, container: Mapping[str, Any], node: Mapping[str, Any],
         cluster_gpu_used_mib: int = 0, group_size: int = 1) -> Launch | Refusal:
    """Judge the start of ``cmd`` on ``node`` with vLLM's own order: config, device, memory.

    ``group_size`` > 1: the leader of a multi-node group (LeaderWorkerSet); its Ray cluster offers the GPUs of
    every pod of the group, and each GPU holds 1/(TP×PP) of the model (:mod:`vllm_remedy.vllm.parallel`)."""
    judged = _plan(cmd, container, node, cluster_gpu_used_mib, group_size)
    if isinstance(judged, Refusal) and judged.stage != "argparse":  # vLLM printed its arguments first
        judged = replace(judged, max_model_len=_typed(cmd.flags.get("max-model-len"), int),
                         gpu_memory_utilization=_typed(cmd.flags.get("gpu-memory-utilization"), float),
                         max_num_batched_tokens=_typed(cmd.flags.get("max-num-batched-tokens"), int),
                         tensor_parallel_size=_typed(cmd.flags.get("tensor-parallel-size"), int),
                         revision=cmd.flags.get("revision"), max_num_seqs=_typed(cmd.flags.get("max-num-seqs"), int),
                         module=entry_log.module(cmd))
    judged = replace(judged, args_model=entry_log.entries(cmd, parse_version(judged.version) or NEWEST_RELEASE))
    if not isinstance(judged, Refusal) or judged.stage not in ("argparse", "cli"):
        taken = argv_added.unmodelled(argv.placed(cmd, _judged(cmd)), parse_version(judged.version) or NEWEST_RELEASE,
                                      later(cmd.image), "openai.api_server" not in cmd.entrypoint)
        judged = replace(judged, unmodelled=tuple(argv_options.dashed(w[0]).partition("=")[0] for _n, w, _at in taken),
                         args_model=entry_log.listed(cmd, parse_version(judged.version) or NEWEST_RELEASE, taken))
    return judged if version_from_image(cmd.image) else replace(judged, version_named=False)


def later(image: str) -> bool:
    """Whether the image runs a release past the newest read (rules extrapolated from it: 0.35.0, 0.34.0.post1,
    0.35.0rc1) or names none (``:latest``): its parser may have options no release read has
    (``argv_added.unmodelled``)."""
    version = version_from_image(image)
    r = rules(version)
    return version is None or (r.extrapolated and r.read_from == NEWEST_RELEASE)


def _judged(cmd: ServerCommand) -> bool:
    """vLLM's own parser reads the argv: ``vllm serve``, the image's entrypoint or the api_server module."""
    return cmd.entrypoint.endswith(" serve") or cmd.entrypoint == "image default" or "api_server" in cmd.entrypoint


def _plan(cmd: ServerCommand, container: Mapping[str, Any], node: Mapping[str, Any],
          cluster_gpu_used_mib: int, group_size: int) -> Launch | Refusal:
    version = image_version(cmd.image)
    release = parse_version(version) or NEWEST_RELEASE
    model_id = cmd.model or entry_log.default_model(release)  # vLLM's default --model (ModelConfig.model)
    # A variable-borne argument (`$(X)`, `$X`: ``cmd.hidden``) makes the tools' estimate unknown; the pod does not
    # expand it into flags (not modelled here), so the rehearsal starts with the flags as written.
    flags = dict(cmd.flags)
    # argparse runs before anything else: a value its type refuses ends the process with exit 2 (``argv``)
    # (a script's words as its shell expanded them into ``flags``: one per flag, the last occurrence)
    # (a flag that takes a value and got none: None; the vLLM parsers' leftover positionals, unless a variable's
    # expansion, which the pod does not model, could change their count)
    words: list[tuple[str, str | None]] = [(o.name, o.value if o.values else None) for o in cmd.options
                                           if o.values or _without_value(o)]  # argv order
    if cmd.script is not None:
        words = [(o.name, None) for o in cmd.options if _without_value(o)] + list(flags.items())
    bare = [t.value for t in cmd.positionals]
    judged = _judged(cmd)
    # exec-form argv reached here as the kubelet expanded it (``$$(X)`` is the literal ``$(X)``, an undefined ``$(X)``
    # stays as written): vLLM gets those words, so they are judged; a script's are the shell's, not modelled
    hidden = cmd.script is not None and any("$" in w or "{{" in w for w in bare)
    bare = bare if judged and not hidden else []
    # a boolean written --flag=text: argparse refuses the explicit value ("ignored explicit argument"); only the
    # `=` forms, as a bare boolean's value in ``flags`` is the tools' reading, not what was written
    booleans = [(o.name, o.flag.attached) for o in cmd.options
                if o.flag.kind in (Kind.BOOLEAN, Kind.STORE_TRUE) and o.flag.attached is not None]
    serve = cmd.entrypoint.endswith(" serve")  # the CLI around argparse reads --model first (``serve_model``)
    written = [t.value for o in cmd.options for t in o.tokens] + bare
    if serve and (said := serve_model.before_parsing(written, release)) is not None:
        return Refusal(version, model_id, said[0], "cli", frames=said[1])
    if judged and (spliced := config_splice.refusal(cmd, release)) is not None:
        if isinstance(spliced, str):  # the file's first --key took the first option's value: argparse refuses it
            prog = "api_server.py" if "api_server" in cmd.entrypoint else "vllm serve"
            return Refusal(version, model_id, "\n".join(argv.ArgError("", spliced).lines(prog, release)), "argparse")
        return Refusal(version, model_id, spliced[0], "cli", frames=spliced[1])
    store_boolean = argv_boolean.raised([t.value for t in cmd.words], release) if judged and not hidden else None
    refused = argv.first_error(words, release, bare, model_tag_required=serve and not hidden, raised=store_boolean,
                               api_server="openai.api_server" in cmd.entrypoint, booleans=booleans,
                               negated=[(o.name, o.tokens[0].value) for o in cmd.options if o.flag.negated],
                               shorts=[(o.flag.spelled, o.flag.attached, o.values[0] if o.values else None)
                                       for o in cmd.options if not o.flag.spelled.startswith("--")],
                               spelled=argv.placed(cmd, judged),  # options the release lacks (argv_added)
                               later=later(cmd.image))  # or may have added, past the newest read
    if refused is not None and refused.raised:  # StoreBoolean's ValueError: a traceback, exit 1
        return Refusal(version, model_id, refused.message, "cli",
                       frames=argv_boolean.frames(release, "openai.api_server" in cmd.entrypoint))
    if refused is not None:
        prog = "api_server.py" if "api_server" in cmd.entrypoint else "vllm serve"
        return Refusal(version, model_id, "\n".join(refused.lines(prog, release)), "argparse")
    typed_model = next((o.value for o in reversed(cmd.options) if o.name == "model"), None)
    if serve and (said := serve_model.after_parsing(typed_model, release)) is not None:
        return Refusal(version, model_id, said[0], "cli", frames=said[1])
    config_from = hf_config_flags.config_id(flags, model_id)  # --hf-config-path: where vLLM reads the config
    typed = str(flags.get("quantization") or flags.get("q") or "").strip()
    typed_quant = None if typed == "None" else typed.lower() or None  # argparse's optional_type made "None" None
    try:
        spec = model_spec(config_from, flags.get("revision"), container, cmd)  # the pod's token, HF_ENDPOINT
    except UserError as err:  # the Hub's "no" in the release's words (``hub_refusal``); a config it cannot size
        return Refusal(version, model_id, **_unfound(version, config_from, flags.get("revision"), err,
                                                     typed_quant)._asdict())
    try:  # --hf-overrides, applied to the config before anything is derived from it
        spec = hf_config_flags.overridden(spec, config_from, flags.get("revision"), flags,
                                          parse_version(version) or NEWEST_RELEASE)
    except UserError as err:
        if str(err).startswith("argument "):  # the pod's parser, before anything else (``argv.ArgError.lines``)
            prog = "api_server.py" if "api_server" in cmd.entrypoint else "vllm serve"
            said = argv.ArgError("hf-overrides", str(err)).lines(prog, release)
            return Refusal(version, model_id, "\n".join(said), "argparse")
        return Refusal(version, model_id, **unmodelled_start.or_vllm(err, str(err)))
    try:  # the quantization this release reads (ModelOpt's producer, hf_quant_config.json: ModelSpec.releases)
        spec = spec.at(parse_version(version) or NEWEST_RELEASE, typed_quant)  # under --quantization, as the CLI
    except UserError as err:  # a reading no start is predicted for: the rehearsal's record (``unmodelled_start``)
        return Refusal(version, model_id, **unmodelled_start.or_vllm(err))
    said = spec.load_refusal_in(parse_version(version) or NEWEST_RELEASE)
    if said is not None:  # get_config's own exception (``hf_overrides``, a stray text_config: ``stray_text``)
        return Refusal(version, model_id, said, "config")
    # The container's env is vLLM's too: VLLM_ALLOW_LONG_MAX_MODEL_LEN turns the max-length refusal into a warning.
    inputs = {"other-process-gib": str(other_process_gib(node, cluster_gpu_used_mib)),
              **engine_select.env_inputs(container, version)}  # and VLLM_USE_V1 selects the engine
    minus_one = _minus_one(flags, version)
    sized = {k: v for k, v in flags.items() if not (minus_one and k == "max-model-len")}
    sized.pop("config", None)  # its path is no setting: the file's flags are in ``flags`` (``config_splice``)
    try:
        world = world_size(flags)
        settings = EngineSettings.from_flags(group_flags(adapters.without(sized)), version, inputs)
    except ConfigRefused as err:  # vLLM's config classes' own exception (memory.config_values), not our phrase
        return Refusal(version, model_id, err.error, "config")
    except UserError as err:
        return Refusal(version, model_id, **unmodelled_start.or_vllm(err))
    # the model config asks its registry: an architecture / quantization method the release lacks, from the pod's own
    # copy of the table (``registry``); a length it refuses too speaks first through 0.9.0 (``config_order``)
    v = parse_version(version) or NEWEST_RELEASE
    too_long = model_len.refused(spec, settings.max_model_len, settings.version, settings.allow_long_max_model_len,
                                 settings.disable_sliding_window) is not None
    if (text := config_order.env_before_model_config(v, inputs)) is not None:  # VLLM_USE_V1 read before anything
        frames = config_refusal.env_frames(v, engine_env.USE_V1, text)
        return Refusal(version, model_id, text, "config", frames=tuple(frames))
    # --dtype float16 on a model_type that refuses it (``dtype_support.float16_refusal``): resolved before the length,
    # after the architecture from 0.9.2 and before it at 0.9.1 (``refusal_order``)
    float16 = dtype_support.float16_refusal(settings.dtype, version, spec.model_types)
    if float16 is not None and v < config_order.ARCH_BEFORE_LENGTH_SINCE:
        return Refusal(version, model_id, float16, "config")
    if (lacking := registry.refusal(v, model_id, spec.architecture, spec.quantization)) is not None and (
            not too_long or config_order.architecture_before_length(v, lacking[0])):
        return Refusal(version, model_id, lacking[0], "config", frames=lacking[1])
    if float16 is not None:
        return Refusal(version, model_id, float16, "config")
    draft = adapters.draft_model(adapters.speculative(flags))
    try:  # SpeculativeConfig builds the draft's ModelConfig at config time, like the target's
        draft_spec = model_spec(draft, None, container, cmd) if draft else None
    except UserError as err:
        return Refusal(version, model_id, **_unfound(version, draft or "", None, err)._asdict())
    if draft and draft_spec and (why := adapters.draft_refused(parse_version(version) or NEWEST_RELEASE, draft,
                                                               draft_spec)):
        return Refusal(version, model_id, why, "config")
    gpu = node_gpu(node)
    if gpu is None or gpu_limit(container) < 1:
        return Refusal(version, model_id, "RuntimeError: No CUDA GPUs are available", "device")
    # the V1 oracle's refusals under VLLM_USE_V1=1 hang on the KV dtype, the model's dtype and MLA too (v1_oracle)
    run_dtype = dtype_support.resolved(spec.dtype, settings.dtype, gpu.capability, settings.version, spec.model_types)
    found: dict[str, Refusal] = {}  # the config-time refusals, by where vLLM runs them (``config_order``)
    # the oracle reads model_config.use_mla: off under VLLM_MLA_DISABLE (``mla_env``; platforms/cuda.py@0.10.2)
    mla_on = spec.is_mla and not mla_env.disabled(v, spec.is_mla, settings.mla_disable_env,
                                                  settings.mla_disable_env_unreadable)[0]
    if (engine_refused := engine_select.refused_by(version, gpu.capability, inputs, settings.kv_cache_dtype,
                                                   run_dtype, mla_on)) is not None:
        variable, line = engine_refused
        frames = config_refusal.env_frames(v, variable, line)
        found[config_order.env_stage(variable, line)] = Refusal(version, model_id, line, "config", frames=tuple(frames))
    # the config's quantization gates (the card's capability, --quantization against the checkpoint's method, the
    # loader --load-format selects: quant_bnb), from the pod's own argv and model (``quant_support``), as the CLI
    try:
        quant_refused = quant_support.refusal(spec, gpu, typed_quant, version, str(flags.get("dtype") or "auto"),
                                              settings.load_format)
    except UserError as err:  # a quantization_config vLLM does not refuse but cannot load either: the start dies
        return Refusal(version, model_id, **unmodelled_start.or_vllm(err))
    if quant_refused is not None:
        found[config_order.quant_stage(quant_refused)] = Refusal(version, model_id, quant_refused, "config")
    if not too_long and (refused := config_order.first(found, config_order.MODEL_CONFIG)) is not None:
        return refused
    if (rope := rope_dispatch.vllm_error(spec, version)) is not None:  # get_rope, as the model is built: nothing to
        return Refusal(version, model_id, rope, "worker")  # size (the engine config's checks before it not played)
    split: Refusal | None = None  # the TP size, refused by the engine config (heads) or as the weights are created
    try:
        resolved, spec, result = _sized(spec, draft_spec, gpu, settings, flags)
    except UserError as err:  # vLLM's own words (quant_config.vllm_exception)
        split = Refusal(version, model_id, **unmodelled_start.or_vllm(err, quant_config.vllm_exception(str(err))))
        try:  # the scheduler's defaults read no TP size; a refused length ends the start before the TP is checked
            resolved, spec, result = _sized(spec, draft_spec, gpu, replace(settings, tp=1), flags)
        except UserError:
            return split
    if too_long:  # the model config's length refusal, before every check below (``Launch.estimate``)
        return Launch(version, model_id, str(flags.get("served-model-name") or model_id).split()[0], spec, gpu,
                      settings, resolved, result, revision=flags.get("revision"),
                      utilization_set=any(canonical_key(k) == "gpu-memory-utilization" for k in cmd.flags),
                      parallel=parallel_sizes(flags))
    if v >= config_order.WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE and (short := _world_short(
            version, model_id, world, gpu_limit(container), group_size, flags)) is not None and short.stage == "config":
        return short  # ParallelConfig, built before the scheduler config (an executor's shortfall comes later)
    # The scheduler config, built after the model config, refuses a batch below the length without chunked prefill:
    # the pod's own reading of its argv (``scheduler``), not the estimate's.
    if (batch := scheduler.refusal(cmd, flags, spec, resolved.rules.engine, v)) is not None:
        found["batch"] = Refusal(version, model_id, config_refusal.batch_error(v, batch.max_num_batched_tokens,
                                                                               batch.max_model_len),
                                 "config", frames=tuple(config_refusal.batch_frames(v)))
    if split is not None and spec.num_heads % settings.tp:  # VllmConfig's verify_with_parallel_config
        found["heads"] = split
    if (refused := config_order.first(found, config_order.ENGINE_CONFIG)) is not None:
        return refused
    # before 0.12 the executor finds the GPUs; the workers build their runners and create the weights: after every
    # config check
    available = gpu_limit(container) * max(1, group_size)
    if (short := _world_short(version, model_id, world, gpu_limit(container), group_size, flags)) is not None:
        return short
    engines = local_engines(flags, parse_version(version)) if group_size <= 1 else 1
    if available < world * engines:  # rank r's engine gets devices [r*world, (r+1)*world): past the pod's, none
        return Refusal(version, model_id, "RuntimeError: No CUDA GPUs are available", "device")
    if minus_one:  # Worker.init_device builds GPUModelRunner, whose buffers are sized by max_model_len
        return Refusal(version, model_id, "RuntimeError: Trying to create tensor with negative dimension -1: [-1, 1]",
                       "worker")
    if split is not None:  # a KV-head, width, group or block split: refused as the weights are created
        return split
    if result.outcome is Outcome.CONFIG_REFUSED:  # the memory model refuses what the pod accepts: size it chunked
        settings = replace(settings, enable_chunked_prefill=True)
        resolved, result = resolve(spec, gpu, settings), estimate(spec, gpu, settings)
    served = str(flags.get("served-model-name") or model_id).split()[0]
    return Launch(version, model_id, served, spec, gpu, settings, resolved, result, revision=flags.get("revision"),
                  utilization_set=any(canonical_key(k) == "gpu-memory-utilization" for k in cmd.flags),
                  parallel=parallel_sizes(flags))


def _world_short(version: str, model_id: str, world: int, own: int, group_size: int,
                 flags: Mapping[str, str]) -> Refusal | None:
    """TP × PP above the GPUs vLLM counts, or None: a single pod's (``own``) in its release's words and time
    (``config_order.world_size_error``: ParallelConfig from 0.12.0, Ray's placement-group wait before). A multi-node
    group's leader (``group_size`` pods) is counted the same way from 0.12.0 unless it names an executor backend or
    ``--nnodes`` > 1: ParallelConfig then picks the backend and, before Ray is asked, compares the world size with
    the devices of this node alone (config/parallel.py@0.12.0 l.561, @0.13.0 l.561 ``cuda_device_count_stateless()``,
    @0.34.0 l.1161 ``current_platform.device_count()``; "... available GPUs (M) in this node" from 0.13.0). Otherwise
    its Ray cluster offers every pod's GPUs: a shortfall waits for a placement group and gives up, as a single pod
    does before 0.12.0 (``config_order``) and as Ray's v1 executor does from then on (``ray_v1``)."""
    v = parse_version(version) or NEWEST_RELEASE
    node_only = group_size <= 1 or (v >= config_order.WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE and _default_backend(flags))
    available = own if node_only else own * group_size
    if available >= world:
        return None
    if not node_only and v >= ray_v1.SINCE and str(flags.get("distributed-executor-backend")).strip() == "ray":
        return Refusal(version, model_id, ray_v1.error(v, world), "executor", frames=ray_v1.frames(v),
                       waits=ray_v1.waits(v, world, own))  # the group's Ray cluster waits for GPUs, then gives up
    if not node_only and v >= ray_v1.SINCE:  # multi-node multiprocessing (--nnodes) or another backend: not read
        return Refusal(version, model_id, f"ValueError: World size ({world}) is larger than the number "
                       f"of available GPUs ({available}) in the group of {group_size} pods.", "device")
    if v >= config_order.WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE:  # the API server's engine config, no GPU touched
        return Refusal(version, model_id, config_order.world_size_error(v, world, available), "config",
                       frames=_PARALLEL_FRAMES)
    return Refusal(version, model_id, config_order.world_size_error(v, world, available), "executor",
                   waits=config_order.ray_wait_logs(v, world))


def _default_backend(flags: Mapping[str, str]) -> bool:
    """No --distributed-executor-backend and at most one node (--nnodes, 0.11.1 on): ParallelConfig chooses the
    backend itself, after its one-node check."""
    try:
        nodes = int(str(flags.get("nnodes", "1")).strip() or "1")
    except ValueError:
        nodes = 1
    return not str(flags.get("distributed-executor-backend") or "").strip() and nodes <= 1


# ``create_engine_config``'s call into ParallelConfig (engine/arg_utils.py@0.13.0 l.1541), a pydantic dataclass
_PARALLEL_FRAMES = (("/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", 1541, "create_engine_config",
                     "parallel_config = ParallelConfig("),
                    ("/usr/local/lib/python3.12/dist-packages/pydantic/_internal/_dataclasses.py", 123, "__init__",
                     "s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)"))


def _sized(spec: ModelSpec, draft_spec: ModelSpec | None, gpu: GpuSpec, settings: EngineSettings,
           flags: Mapping[str, str]) -> tuple[Resolved, ModelSpec, Estimate]:
    """The start's rules, its model with the LoRA and draft model the simulator sizes itself (``adapters``) and the
    memory model's verdict; a UserError for a TP size the model cannot split."""
    resolved = resolve(spec, gpu, settings)
    spec = adapters.loaded(spec, draft_spec, gpu, resolved, settings.quantization, flags)
    return resolve(spec, gpu, settings), spec, estimate(spec, gpu, settings)
