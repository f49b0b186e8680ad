"""The budget's evidence from the pods' logs is taken only from pods on the card it plans for.

Seen once in a full run: after the pin step wrote an L40S pin to a StatefulSet, its controller had not yet
observed the spec, so the L4 pods still counted as the update revision's and their L4 log (0.23x) refused the
L40S plan that --dry had shown (1.51x -> --max-model-len 16384): -y differed from --dry."""

from __future__ import annotations

from vllm_remedy.operations.budget import _on_card


def _node(name: str, product: str | None) -> dict:
    labels = {"nvidia.com/gpu.product": product} if product else {}
    return {"metadata": {"name": name, "labels": labels}}


PICTURE = {"nodes": [_node("l4-1", "NVIDIA-L4"), _node("l40s-1", "NVIDIA-L40S"), _node("cpu-1", None)]}


def test_pods_on_another_card_are_not_this_cards_evidence():
    pods = {"deployment": "llama-sts", "pods": [
        {"name": "a", "node": "l4-1", "new": True}, {"name": "b", "node": "l40s-1", "new": True},
        {"name": "c", "node": "cpu-1", "new": True}, {"name": "d", "node": None, "new": True},
        {"name": "e", "node": "gone-node", "new": True}]}
    kept = _on_card(pods, PICTURE, "NVIDIA-L40S")
    assert [r["name"] for r in kept["pods"]] == ["b", "c", "d", "e"]  # only a node known to hold another card drops
    assert kept["deployment"] == "llama-sts"
    assert [r["name"] for r in _on_card(pods, PICTURE, "NVIDIA-L4")["pods"]] == ["a", "c", "d", "e"]
