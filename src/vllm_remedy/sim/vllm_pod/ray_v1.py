"""A Ray executor short of GPUs from 0.12.0 (v1/executor/ray_utils.py, read at every release 0.12.0-0.34.0): what a
multi-node group's leader that names ``--distributed-executor-backend ray`` logs and raises when TP × PP exceeds the
GPUs of its Ray cluster.

``initialize_ray_cluster`` first warns when the world size exceeds this node's devices ("Tensor parallel size (N)
exceeds available GPUs (M). ..."), then that the placement group lacks GPUs, creates it (one ``{'GPU': 1.0}`` bundle
per worker, the first pinned to this node with ``'node:<ip>': 0.001`` up to 0.32.0; 0.33.0 pins none) and waits in
``_wait_until_pg_ready``, doubling its wait from 10 s and logging after each, until PG_WAIT_TIMEOUT (1800 s); then,
with more than one GPU required, "Cannot provide a placement group requiring N GPUs (...) within 1800 seconds." plus
two lines of advice. Before 0.12.0 ``config_order.ray_wait_logs``/``world_size_error`` hold the older executor's.
"""

from __future__ import annotations

from .config_order import PG_WAIT_TIMEOUT, POD_IP

Version = tuple[int, int, int]
Frame = tuple[str, int, str, str]
SINCE: Version = (0, 12, 0)
NODE_PIN_UNTIL: Version = (0, 33, 0)
_FILE = "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/ray_utils.py"
#: (``_wait_until_pg_ready(current_placement_group)`` line in initialize_ray_cluster, its ``raise ValueError(``)
_LINES: dict[Version, tuple[int, int]] = {
    (0, 12, 0): (434, 268), (0, 14, 0): (437, 271), (0, 15, 0): (440, 274), (0, 17, 0): (455, 289),
    (0, 18, 0): (479, 313), (0, 20, 0): (663, 486), (0, 22, 0): (664, 487), (0, 24, 0): (666, 489),
    (0, 28, 0): (676, 499), (0, 29, 0): (658, 499), (0, 30, 0): (655, 496), (0, 31, 0): (649, 489),
    (0, 33, 0): (379, 245),
}


def specs(v: Version, world: int) -> str:
    """The placement group's bundles as Python prints the list."""
    first = f"{{'GPU': 1.0, 'node:{POD_IP}': 0.001}}" if v < NODE_PIN_UNTIL else "{'GPU': 1.0}"
    return "[" + ", ".join([first, *["{'GPU': 1.0}"] * (world - 1)]) + "]"


def waits(v: Version, world: int, node_gpus: int) -> tuple[tuple[float, str, str], ...]:
    """(seconds after the executor starts, level, message) of what it logs before the ValueError."""
    out: list[tuple[float, str, str]] = []
    if world > node_gpus:
        out.append((0.0, "WARNING", f"Tensor parallel size ({world}) exceeds available GPUs ({node_gpus}). This may "
                    "result in Ray placement group allocation failures. Consider reducing tensor_parallel_size to "
                    f"{node_gpus} or less, or ensure your Ray cluster has {world} GPUs available."))
    out.append((0.0, "WARNING", "The number of required GPUs exceeds the total number of available GPUs in the "
                "placement group."))
    waited, interval = 0, 10
    while waited < PG_WAIT_TIMEOUT:
        waited += interval
        interval *= 2
        out.append((float(waited), "INFO", f"Waiting for creating a placement group of specs for {waited} seconds. "
                    f"specs={specs(v, world)}. Check `ray status` and `ray list nodes` to see if you have enough "
                    "resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP "
                    "environment variable specified in each node if you are running on a multi-node."))
    return tuple(out)


def error(v: Version, world: int) -> str:
    """The exception once the wait is over (``world`` > 1: the executor runs Ray only for more than one GPU)."""
    return (f"ValueError: Cannot provide a placement group requiring {world} GPUs (placement_group_specs="
            f"{specs(v, world)}) within {PG_WAIT_TIMEOUT} seconds.\nTensor parallel size may exceed available GPUs "
            "in your cluster. Check resources with `ray status` and `ray list nodes`.\nIf running on K8s with "
            "limited GPUs, consider reducing --tensor-parallel-size to match available GPU resources.")


def frames(v: Version) -> tuple[Frame, ...]:
    """The executor's two frames in ``v`` (the releases between two read ones with the same lines take them)."""
    call, line = _LINES[max(r for r in _LINES if r <= v)]
    return ((_FILE, call, "initialize_ray_cluster", "_wait_until_pg_ready(current_placement_group)"),
            (_FILE, line, "_wait_until_pg_ready", "raise ValueError("))
