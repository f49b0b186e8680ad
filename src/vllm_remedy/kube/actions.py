"""The writes of the Kubernetes layer: kubectl's undo to a revision (I/O around the pure plan).

Reads happen first and every write is a guarded JSON patch, so a failure before the PATCH changes
nothing and a concurrent edit surfaces as ConflictError instead of being overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.history import Revision, rollout_history
from vllm_remedy.kube.patch import apply_deployment_patch
from vllm_remedy.kube.rollout import UndoPlan, plan_undo
from vllm_remedy.kube.selectors import selector_string


@dataclass(frozen=True)
class RolloutState:
    """A Deployment with the ReplicaSets its selector matches, read together."""

    deployment: dict[str, Any]
    replicasets: list[dict[str, Any]]

    @property
    def history(self) -> list[Revision]:
        """``kubectl rollout history`` over this one read, so the revisions shown and the undo planned from it agree."""
        return rollout_history(self.deployment, self.replicasets)


def read_rollout(client: KubeClient, namespace: str, name: str) -> RolloutState:
    """kubectl's reads for history/undo: GET the Deployment, LIST ReplicaSets by its selector."""
    deployment = client.get_deployment(namespace, name)
    selector = selector_string((deployment.get("spec") or {}).get("selector"))
    return RolloutState(deployment, client.list_replicasets(namespace, selector))


def undo(client: KubeClient, namespace: str, name: str, to_revision: int = 0, *, keys: Keys | None = None,
         reason: str = "", at: float | None = None, action: str = "restore", dry_run: bool = False,
         state: RolloutState | None = None) -> tuple[UndoPlan, dict[str, Any] | None]:
    """Roll back like ``kubectl rollout undo`` (guarded); returns the plan and the server's answer (None if skipped).

    Pass ``state`` to undo against exactly what was shown to the operator: the resourceVersion test then
    refuses the write if anything moved in between.
    """
    state = state or read_rollout(client, namespace, name)
    plan = plan_undo(state.deployment, state.replicasets, to_revision, keys=keys, action=action, reason=reason,
                     at=at)
    if plan.skipped:
        return plan, None
    return plan, apply_deployment_patch(client, namespace, name, plan.patch, dry_run=dry_run,
                                        basis=state.deployment)
