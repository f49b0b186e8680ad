"""The rehearsal pod sizes a sliding-window model's per-request need as the release does: from 0.26.0 the window holds
every in-flight batch (two with async scheduling, vLLM's default; one with --no-async-scheduling), read from the pod's
own argv through the memory model's layout (``memory.in_flight``). Gemma 2 9B on an L4 at utilization 0.98 with
--max-num-batched-tokens 1024: 866 blocks against 512 + 385 = 897 per 8,192-token request (async) or 512 + 321 = 833."""

from __future__ import annotations

import pytest

from vllm_remedy.sim.seed import make_node
from vllm_remedy.sim.vllm_pod.launch import Launch, plan
from vllm_remedy.vllm.cmdline import find_server
from vllm_remedy.vllm.outcomes import Outcome

ARGS = ["google/gemma-2-9b-it", "--gpu-memory-utilization", "0.98", "--max-num-batched-tokens", "1024"]


def launch(image: str, extra: list[str]) -> Launch:
    c = {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": [*ARGS, *extra],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    got = plan(find_server({"containers": [c]}), c, make_node({"name": "n", "gpu": {"product": "NVIDIA-L4"}}, "t"))
    assert isinstance(got, Launch), got
    return got


@pytest.mark.parametrize(("image", "extra", "outcome", "per_request"), [
    ("vllm/vllm-openai:v0.26.0", [], Outcome.MAX_LEN_EXCEEDS_KV, 897),
    ("vllm/vllm-openai:v0.26.0", ["--no-async-scheduling"], Outcome.FITS, 833),
    ("vllm/vllm-openai:v0.26.0", ["--async-scheduling", "--no-async-scheduling"], Outcome.FITS, 833),
    ("vllm/vllm-openai:v0.25.0", [], Outcome.FITS, 833),
])
def test_the_pod_counts_the_in_flight_batches(image, extra, outcome, per_request):
    est = launch(image, extra).estimate
    assert est.outcome is outcome
    assert est.max_concurrency == pytest.approx(est.gpu_blocks / per_request)
