"""What the parts of the simulator need from a cluster, as Protocols that :class:`sim.cluster.Cluster` meets.

Why: ``cluster.py`` builds the kubelet, applies seeds and installs the vLLM runtime, so those modules
must not import ``cluster.py`` back. Each names only what it reads here; this module sits below all
of them (it imports just the clock, store and runtime seams).
"""

from __future__ import annotations

from typing import Protocol

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.runtime import Runtime
from vllm_remedy.sim.store import Store


class ClusterParts(Protocol):
    """The objects and the simulated time every consumer reads."""

    store: Store
    clock: Clock


class ClusterLike(ClusterParts, Protocol):
    """What the API needs: the cluster's name and the two kubelet subresources (``pods/log``, ``pods/proxy``)."""

    name: str

    def read_log(self, namespace: str, pod: str, container: str, previous: bool,
                 timestamps: bool = False) -> str: ...

    def proxy(self, namespace: str, pod: str, port: int, path: str) -> tuple[int, str, bytes]: ...


class RuntimeHost(ClusterParts, Protocol):
    """A cluster whose container runtime can be read and swapped (``vllm_pod.install``)."""

    runtime: Runtime


class KubeletHost(RuntimeHost, Protocol):
    """What the kubelet feels beyond its pods: GPU memory held outside Kubernetes and offered load."""

    node_gpu_used_mib: dict[str, int]

    def load_for(self, namespace: str, deployment: str) -> float: ...


class SeedTarget(ClusterParts, Protocol):
    """What seeding needs: create objects, then wait until each deployment is rolled out; install optional CRDs."""

    crds: set[str]

    def rolled_out(self, namespace: str, name: str) -> bool: ...
