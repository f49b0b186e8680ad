"""The built-in rehearsal cluster for ``--cluster local``: started in-process on a random 127.0.0.1 port.

The same server ``vllm-remedy sim up`` runs, seeded with the scenario's world; its kubeconfig names the
cluster ``rehearsal`` so the deploys address ``@k8s/rehearsal/<namespace>/<deployment>`` exactly as with
``inventories/local.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vllm_remedy.sim import kubeconfig as sim_kubeconfig
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.seed import load_seed
from vllm_remedy.sim.server import SimServer
from vllm_remedy.sim.shipped_models import tools_env
from vllm_remedy.sim.vllm_pod.reality import Reality

CONTEXT = "rehearsal"


@dataclass
class LocalCluster:
    """A running rehearsal cluster and the kubeconfig the game's pyinfra runs use to reach it."""

    server: SimServer
    cluster: Cluster
    kubeconfig: Path
    context: str = CONTEXT
    #: What the game's deploys add to their environment so they resolve the models the world ships as its pods do
    #: (``sim.shipped_models``: a Hugging Face cache in the game's folder, read offline); empty when it ships none.
    tools_env: dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        """Stop the controllers and the API server; the game calls it last, after the pre-game restore."""
        self.cluster.stop()
        self.server.stop()


def start_local(workdir: Path, seed: str | Path, speed: float, reality: Reality | None = None) -> LocalCluster:
    """Start controllers, apply ``seed`` (waiting for its rollouts), serve it; caller must ``stop()``. ``reality``
    (the scenario's or the command line's) wins over the seed's; neither means perturbed."""
    cluster = Cluster(CONTEXT, speed=speed, reality=reality)
    cluster.start()
    try:
        cluster.apply_seed(seed, wait=True, timeout=120, reality=reality)
        server = SimServer([cluster])
    except BaseException:
        cluster.stop()
        raise
    server.start()
    path = sim_kubeconfig.write(workdir / "kubeconfig", server.url, [CONTEXT])
    return LocalCluster(server, cluster, path, tools_env=tools_env(load_seed(seed)[0], workdir))
