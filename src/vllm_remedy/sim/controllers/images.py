"""Container images on nodes: which a node has, and how long the kubelet takes to pull one it has not.

A node reports its images in ``status.images`` (``names`` + ``sizeBytes``), as a kubelet does; a node object
written without that field (a test's hand-made node) is taken to have every image, the simulator's behaviour
before it pulled. A vLLM image is big — CUDA, PyTorch and vLLM's own wheels, about 9 GB compressed — so a
rollout onto a node that never ran it spends minutes in ``ContainerCreating`` before vLLM prints a line;
other images take a second. Pulls on one node run one at a time (kubelet's default ``serializeImagePulls``),
and a pod wanting an image already being pulled waits for that pull.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from vllm_remedy.sim.controllers.containers import image_id

Obj = dict[str, Any]

VLLM_IMAGE_BYTES = 9_000_000_000
OTHER_IMAGE_BYTES = 50_000_000
PULL_BYTES_PER_SECOND = 80_000_000  # a registry over the network, decompressed and unpacked to disk


def image_bytes(image: str) -> int:
    """The compressed size the simulator gives an image (vLLM's are the big ones)."""
    return VLLM_IMAGE_BYTES if "vllm" in image.lower() else OTHER_IMAGE_BYTES


def pull_seconds(image: str) -> float:
    """Seconds a pull of ``image`` takes from start to "Successfully pulled"."""
    return round(image_bytes(image) / PULL_BYTES_PER_SECOND, 1)


def image_names(image: str) -> list[str]:
    """The ``names`` a node lists for an image: its digest and its normalised tag (``docker.io/library/…``)."""
    digest = image_id(image)
    repo = digest.split("@", 1)[0]
    tag = image.rsplit("/", 1)[-1].split(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else "latest"
    return [digest, f"{repo}:{tag}"]


def has_image(node: Obj, image: str) -> bool:
    """Whether ``node`` holds ``image`` (a node that reports no ``status.images`` holds them all)."""
    listed = (node.get("status") or {}).get("images")
    if listed is None:
        return True
    names = set(image_names(image)) | {image}
    return any(names & set(entry.get("names") or []) for entry in listed)


def add_images(node: Obj, images: Iterable[str]) -> None:
    """Record ``images`` in the node's ``status.images`` (as the kubelet's next status update would)."""
    listed = node.setdefault("status", {}).setdefault("images", [])
    for image in images:
        if not has_image(node, image):
            listed.append({"names": image_names(image), "sizeBytes": image_bytes(image)})
    listed.sort(key=lambda entry: -int(entry.get("sizeBytes") or 0))  # the kubelet lists the largest first


class Pulls:
    """The pulls under way, per node: when each node's puller is free and when each image will be there."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: dict[str, float] = {}  # node → when its current pull ends
        self._done: dict[tuple[str, str], float] = {}  # (node, image) → when its pull ends

    def schedule(self, node: str, image: str, now: float) -> tuple[float, float]:
        """(when the image is there, seconds of that spent waiting for other pulls) for a pull asked at ``now``."""
        with self._lock:
            ready = self._done.get((node, image))
            if ready is not None and ready > now:
                return ready, ready - now  # someone else's pull of it: wait for that one
            start = max(now, self._busy.get(node, now))
            end = start + pull_seconds(image)
            self._busy[node] = end
            self._done[(node, image)] = end
            return end, start - now
