"""Tensor × pipeline parallelism across a multi-node group (LeaderWorkerSet + Ray), for the memory model (pure).

Why a separate step: the memory model splits weights and KV cache over ``tensor-parallel-size`` GPUs.
A multi-node vLLM also shards layers over ``pipeline-parallel-size`` stages, one or more per node, so each
GPU holds 1/(TP×PP) of the weights and of the per-token KV cache — the same share as TP×PP-way tensor
parallelism. :func:`group_flags` rewrites the flags so the estimator sees that world size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.vllm.cmdline.flags import canonical_key
from vllm_remedy.vllm.versions import parse_version, version_from_image

TP, PP = "tensor-parallel-size", "pipeline-parallel-size"


def parallel_sizes(flags: Mapping[str, str]) -> tuple[int, int]:
    """(tensor-parallel-size, pipeline-parallel-size), each 1 when unset; a UserError for a non-integer."""
    norm = {canonical_key(k): v for k, v in flags.items()}
    out = []
    for key in (TP, PP):
        raw = str(norm.get(key, "1")).strip()
        try:
            out.append(int(raw))
        except ValueError:
            raise UserError(f"{key}: {raw!r} is not an integer") from None
    return out[0], out[1]


def world_size(flags: Mapping[str, str]) -> int:
    """GPUs one engine spans: TP × PP (across the nodes of its group)."""
    tp, pp = parallel_sizes(flags)
    return tp * pp


def group_flags(flags: Mapping[str, str]) -> dict[str, str]:
    """``flags`` as the memory model must see them: TP×PP as the tensor-parallel split, no pipeline flag."""
    tp, pp = parallel_sizes(flags)
    if pp == 1:
        return dict(flags)
    out = {k: v for k, v in flags.items() if canonical_key(k) not in (TP, PP)}
    out[TP] = str(tp * pp)
    return out


DP, DP_LOCAL, DP_RANK = "data-parallel-size", "data-parallel-size-local", "data-parallel-rank"
#: The first release whose argument parser takes ``--data-parallel-size`` (engine/arg_utils.py@0.8.3); before it
#: argparse refuses the flag, which the argument checks report.
DATA_PARALLEL_SINCE = (0, 8, 3)


def _int_flag(norm: Mapping[str, str], key: str, default: int) -> int:
    raw = str(norm.get(key, default)).strip()
    try:
        return int(raw)
    except ValueError:
        raise UserError(f"{key}: {raw!r} is not an integer") from None


def local_engines(flags: Mapping[str, str], version: tuple[int, ...] | None = None) -> int:
    """Data-parallel engines this pod starts, each over its own TP × PP GPUs.

    vLLM's API server starts one engine core per local data-parallel rank and sets rank ``r``'s CUDA_VISIBLE_DEVICES
    to ``[r × world_size, (r + 1) × world_size)`` (``get_device_indices``, v1/engine/utils.py; 0.8.5 does it in
    ``DPEngineCoreProc`` with TP for the width, every rank local, v1/engine/core.py@0.8.5). The device plugin sets no
    CUDA_VISIBLE_DEVICES, so an index past the container's GPUs is passed through and that engine sees none: a pod
    needs DP_local × TP × PP GPUs. ``--data-parallel-size-local`` says how many ranks run here (a multi-node layout);
    ``--data-parallel-rank`` alone is one rank per pod (external load balancing). Before 0.8.3 there is no flag."""
    norm = {canonical_key(k): v for k, v in flags.items()}
    if version is not None and version < DATA_PARALLEL_SINCE:
        return 1
    if DP_LOCAL in norm:
        return max(1, _int_flag(norm, DP_LOCAL, 1))
    if DP_RANK in norm:
        return 1
    return max(1, _int_flag(norm, DP, 1))


def pod_gpus_needed(flags: Mapping[str, str], version: tuple[int, ...] | None = None) -> int:
    """GPUs one pod's vLLM must see: TP × PP × its local data-parallel engines."""
    return world_size(flags) * local_engines(flags, version)


def container_gpus(container: Mapping[str, Any], resource: str = "nvidia.com/gpu") -> int | None:
    """GPUs the device plugin hands ``container`` (``resource``, limits before requests, as the kubelet reads an
    extended resource); None when unset, 0 when not a whole count."""
    resources = container.get("resources") or {}
    for part in ("limits", "requests"):
        section = resources.get(part) or {}
        if isinstance(section, Mapping) and resource in section:
            try:
                return int(str(section[resource]).strip())
            except ValueError:
                return 0
    return None


NO_GPU = "RuntimeError: No CUDA GPUs are available"
#: ``ParallelConfig.__post_init__`` compares the world size with the GPUs it sees from 0.12.0 (config/parallel.py@0.12.0
#: l.560-567, when no executor backend is set); before, it picks Ray for a world wider than the GPUs (config.py@0.6.3
#: l.870, @0.8.5 l.1753; config/parallel.py@0.11.0 l.456-463) and the executor fails, after every config check.
WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE = (0, 12, 0)
WORLD_SIZE_WORDS_SINCE = (0, 13, 0)  # "World size (N) is larger ..." (config/parallel.py@0.13.0 l.565; 0.12.0 differs)
#: The ``refusal_order`` stages vLLM runs before ``ParallelConfig``: the env read first, the model config, the env
#: oracle (engine/arg_utils.py@0.13.0: the model config l.1332, the parallel config l.1541, the scheduler's l.1586).
BEFORE_PARALLEL_CONFIG = frozenset({"env_early", "len", "arch", "qmethod", "env"})
#: Before 0.12.0 the executor's placement group: from 0.6.5 Ray waits PG_WAIT_TIMEOUT (1800 s) for GPUs the pod lacks
#: (executor/ray_utils.py@0.6.5 l.193, @0.7.3 l.234, @0.8.5 l.246, @0.11.0 l.252); 0.6.4.post1 raised at once (its
#: ray_utils.py l.281-283); earlier releases were not read and are taken as 0.6.4.
RAY_WAIT_SINCE = (0, 6, 5)


def world_size_words(world: int, gpus: int, version: tuple[int, ...] | None) -> str:
    """What vLLM prints when TP × PP (``world``) is above the pod's ``gpus``, by release (None: the newest).

    0.13.0 on: ``ParallelConfig``'s "World size (N) is larger than the number of available GPUs (M) in this node."
    (config/parallel.py@0.13.0 l.565-566, @0.14.0 l.608-609, @0.34.0 l.1165-1166), its first sentence (two lines on
    ``--distributed-executor-backend`` / ``--nnodes`` follow); 0.12.x: "Tensor parallel size (N) cannot be larger
    than the number of available GPUs (M)." (config/parallel.py@0.12.0 l.564-566); before: Ray's placement group for
    ``world`` GPUs, never ready (``initialize_ray_cluster``: a warning, then the ValueError after 1800 s, whose last
    sentence names `ray status` through 0.7.3 and `ray list nodes` too by 0.8.5, so it is left out; 0.6.4.post1
    raised the warning's words at once)."""
    if version is None or version >= WORLD_SIZE_WORDS_SINCE:
        return (f"ValueError: World size ({world}) is larger than the number of available GPUs ({gpus}) in this "
                "node.")
    if version >= WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE:
        return (f"ValueError: Tensor parallel size ({world}) cannot be larger than the number of available GPUs "
                f"({gpus}).")
    if version >= RAY_WAIT_SINCE:
        return ("ValueError: Cannot provide a placement group of placement_group_specs=[" + ", ".join(
            ["{'GPU': 1.0, 'node:<pod IP>': 0.001}", *["{'GPU': 1.0}"] * (world - 1)]) + "] within 1800 seconds.")
    return "ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group."


def node_only(flags: Mapping[str, str], version: tuple[int, ...] | None) -> bool:
    """Whether vLLM ``version`` (None: the newest) counts only its own node's GPUs for a multi-node engine: from
    0.12.0 when no ``--distributed-executor-backend`` is named and ``--nnodes`` is at most 1 (``ParallelConfig``
    checks the world size before it picks the backend, config/parallel.py@0.12.0 l.547-566); with Ray named, or
    before 0.12.0, Ray's cluster spans the group."""
    if version is not None and version < WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE:
        return False
    norm = {canonical_key(k): str(v).strip() for k, v in flags.items()}
    try:
        nodes = int(norm.get("nnodes", "1") or "1")
    except ValueError:
        nodes = 1
    return not norm.get("distributed-executor-backend") and nodes <= 1


def refused_before_world_size(stage: str | None, version: tuple[int, ...] | None) -> bool:
    """Whether a refusal at ``stage`` (``memory.refusal_order.Stage``; None: no config-time refusal) speaks before the
    world size: from 0.12.0 the stages before ``ParallelConfig``; before, every config check (the executor comes
    after them), but not the TP splits the workers refuse as they create the weights."""
    if stage is None:
        return False
    if version is None or version >= WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE:
        return stage in BEFORE_PARALLEL_CONFIG
    return stage != "weights"


def gpu_shortfall(flags: Mapping[str, str], container: Mapping[str, Any], resource: str = "nvidia.com/gpu",
                  version: tuple[int, ...] | None = None) -> str | None:
    """Why one pod's vLLM cannot start on the GPUs its container gets, or None; vLLM stops before sizing memory.

    No ``resource`` limit (or no whole one): the device plugin mounts no GPU, and vLLM fails with "No CUDA GPUs are
    available" (the rehearsal cluster's kubelet does the same). TP × PP above the GPUs: the release's words
    (:func:`world_size_words`). DP engines beyond the GPUs: the last ranks get device indices the container lacks."""
    gpus = container_gpus(container, resource)
    name = container.get("name") or "vLLM"
    if gpus is None or gpus < 1:
        why = f"no {resource} limit" if gpus is None else f"a {resource} limit of no whole GPU"
        return f"container {name} has {why}, so the device plugin gives it no GPU: vLLM stops with '{NO_GPU}'"
    tp, pp = parallel_sizes(flags)
    if tp * pp > gpus:
        how = ("refuses the start with" if version is None or version >= WORLD_SIZE_IN_PARALLEL_CONFIG_SINCE else
               "has no config check before 0.12.0: its Ray executor waits for the GPUs, then fails with")
        return (f"world size {tp * pp} (TP {tp} × PP {pp}) is larger than the {gpus} GPU(s) of the pod "
                f"({resource}: {gpus}): vLLM {how} '{world_size_words(tp * pp, gpus, version)}'")
    engines = local_engines(flags, version)
    if tp * pp * engines > gpus:
        return (f"{engines} data-parallel engines × world size {tp * pp} (TP {tp} × PP {pp}) need "
                f"{tp * pp * engines} GPUs, the pod has {gpus} ({resource}: {gpus}): the engines past its GPUs find "
                f"none ('{NO_GPU}')")
    return None


def pod_shortfall(flags: Mapping[str, str], container: Mapping[str, Any], image: str, resource: str) -> str | None:
    """:func:`gpu_shortfall` under the image's release (its data-parallel rule), None when a size cannot be read
    (the prediction says why)."""
    version = version_from_image(image)
    try:
        return gpu_shortfall(flags, container, resource, parse_version(version) if version else None)
    except UserError:
        return None


def layout_fix(resource: str = "nvidia.com/gpu") -> str:
    """What to change when :func:`gpu_shortfall` says no."""
    return (f"set limits {resource} to at least --tensor-parallel-size × --pipeline-parallel-size × "
            "--data-parallel-size, or lower those sizes to the GPUs the pod gets")
