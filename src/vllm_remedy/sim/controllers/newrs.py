"""The ReplicaSet a Deployment controller makes for a template: name, hash, selector, annotations. Pure.

Shared by the controller (a new revision) and by seeds (history written directly, without rolling
each revision out), so a seeded history ReplicaSet is exactly what the controller would have left:
same pod-template-hash, labels, selector and annotation set — hence the same ``rollout history
--revision=N`` output and the same template match when ``rollout undo`` picks it.
"""

from __future__ import annotations

import copy
from typing import Any

from vllm_remedy.sim.controllers import rollout as ro
from vllm_remedy.sim.controllers.defaults import default_pod_template
from vllm_remedy.sim.controllers.hashing import HASH_LABEL, pod_template_hash
from vllm_remedy.sim.controllers.util import (
    DESIRED_REPLICAS,
    LAST_APPLIED,
    MAX_REPLICAS,
    REVISION,
    REVISION_HISTORY,
    owner_ref,
)

Obj = dict[str, Any]

#: Deployment annotations the controller does not copy onto its ReplicaSets (annotationsToSkip).
NOT_COPIED = {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS}
HISTORY_CHARS = 2000  # --deployment-controller revision-history length limit


def replicaset_for(d: Obj, new_revision: str, replicas: int, collisions: int = 0) -> Obj:
    """The ReplicaSet body for ``d``'s current template at ``new_revision`` (not yet stored)."""
    meta = d["metadata"]
    template = default_pod_template(copy.deepcopy(d["spec"].get("template") or {}))
    tpl_hash = pod_template_hash(template, collisions)
    template["metadata"].setdefault("labels", {})[HASH_LABEL] = tpl_hash
    selector = copy.deepcopy(d["spec"].get("selector") or {})
    selector.setdefault("matchLabels", {})[HASH_LABEL] = tpl_hash
    rs: Obj = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{tpl_hash}", "namespace": meta["namespace"],
            "labels": dict(template["metadata"]["labels"]), "annotations": {},
            "ownerReferences": [owner_ref(d)],
        },
        "spec": {"replicas": replicas, "selector": selector, "template": template},
    }
    if d["spec"].get("minReadySeconds"):
        rs["spec"]["minReadySeconds"] = d["spec"]["minReadySeconds"]
    set_new_rs_annotations(d, rs, new_revision, exists=False)
    return rs


def set_new_rs_annotations(d: Obj, rs: Obj, new_revision: str, *, exists: bool) -> bool:
    """Copy the Deployment's annotations, then set revision (+history on reuse) and replica counts.

    Returns whether anything changed (the controller writes the ReplicaSet only then)."""
    notes = rs["metadata"].setdefault("annotations", {})
    before = dict(notes)
    for key, value in (d["metadata"].get("annotations") or {}).items():
        if key not in NOT_COPIED:
            notes[key] = value
    old_revision = notes.get(REVISION)
    old_int = int(old_revision) if old_revision and old_revision.isdigit() else 0
    if old_int < int(new_revision):
        notes[REVISION] = new_revision
        if exists and old_revision:
            history = [h for h in notes.get(REVISION_HISTORY, "").split(",") if h]
            history.append(old_revision)
            while len(",".join(history)) > HISTORY_CHARS and len(history) > 1:
                history.pop(0)
            notes[REVISION_HISTORY] = ",".join(history)
    if not exists:  # an existing RS's replica annotations move only when it is scaled
        notes[DESIRED_REPLICAS] = str(ro.replicas_of(d))
        notes[MAX_REPLICAS] = str(ro.replicas_of(d) + ro.max_surge(d))
    return notes != before
