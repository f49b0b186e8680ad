"""pod-template-hash and generated names, with the properties kubectl's rollback relies on.

Two templates that the apiserver would store identically must hash identically (so ``rollout undo``
finds and reuses the old ReplicaSet), hence the canonical form: defaults applied, nulls and empty
maps/lists dropped, the ``pod-template-hash`` label ignored. The digest is FNV-32a like the real
controller's, and rendered in the same "safe" alphabet (no vowels, no look-alike characters).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from vllm_remedy.sim.controllers.defaults import default_pod_template

HASH_LABEL = "pod-template-hash"
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _prune(value: Any) -> Any:
    """Drop None and empty containers recursively: the apiserver does not keep them either."""
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def canonical_template(template: dict[str, Any] | None) -> dict[str, Any]:
    """The template as stored after defaulting, without the hash label: the identity of a revision."""
    tpl = default_pod_template(copy.deepcopy(template or {}))
    labels = tpl.get("metadata", {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return _prune(tpl)


def templates_equal(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Revision identity as the controller judges it: equal once defaulted and pruned, hash label ignored."""
    return canonical_template(a) == canonical_template(b)


def fnv32a(data: bytes) -> int:
    """32-bit FNV-1a, the hash the real controller feeds pod templates through for pod-template-hash."""
    value = 0x811C9DC5
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """Map each character onto the safe alphabet, as k8s.io/apimachinery's SafeEncodeString does."""
    return "".join(ALPHABET[ord(ch) % len(ALPHABET)] for ch in text)


def pod_template_hash(template: dict[str, Any] | None, collision_count: int = 0) -> str:
    """Stable short hash of the canonical template (plus the collision count, as the controller adds)."""
    data = json.dumps(canonical_template(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


def random_suffix(length: int = 5, rng: random.Random | None = None) -> str:
    """The ``-xxxxx`` of a generated pod name."""
    pick = (rng or random).choice
    return "".join(pick(ALPHABET) for _ in range(length))
