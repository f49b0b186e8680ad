"""GpuMemory fact: the exporter's answer per node as plain data, or one sentence saying why it is unknown."""

from __future__ import annotations

import json

import pytest

from vllm_remedy.facts.gpu_memory import GpuMemory, node_memory

TEXT = ('DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",modelName="NVIDIA L4",container="vllm",namespace="llm",'
        'pod="p-1"} 6144\nDCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-a",modelName="NVIDIA L4",container="vllm",'
        'namespace="llm",pod="p-1"} 16890\n')


def test_a_read_exporter_gives_each_gpu_and_its_pods() -> None:
    got = GpuMemory().process([json.dumps({"nodes": {"n1": {"exporter": "gpu-operator/e", "text": TEXT}}})])
    (gpu,) = got["nodes"]["n1"]["gpus"]
    assert got["nodes"]["n1"]["unknown"] is None
    assert (gpu["used_mib"], gpu["free_mib"], gpu["total_mib"]) == (6144, 16890, 23034)
    assert gpu["pods"] == [{"namespace": "llm", "pod": "p-1", "container": "vllm"}]


@pytest.mark.parametrize("row,why", [
    ({"missing": True, "error": "x"}, "no DCGM exporter on node n1 (no pod labelled app=nvidia-dcgm-exporter there)"),
    ({"missing": False, "error": "ctx: GET /api/v1/pods: HTTP 403: nope"},
     "cannot list DCGM exporter pods (ctx: GET /api/v1/pods: HTTP 403: nope)"),
    ({"exporter": "gpu-operator/e", "status": 403, "error": "HTTP 403: forbidden"},
     "reading DCGM exporter gpu-operator/e through pods/proxy is forbidden (HTTP 403: forbidden)"),
    ({"exporter": "gpu-operator/e", "status": 503, "error": "HTTP 503: connection refused"},
     "DCGM exporter gpu-operator/e did not answer through pods/proxy (HTTP 503: connection refused)"),
    ({"exporter": "gpu-operator/e", "text": "<html>oops</html>"},
     "DCGM exporter gpu-operator/e: its metrics do not parse (not a Prometheus sample: '<html>oops</html>')"),
    ({"exporter": "gpu-operator/e", "text": 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1\n'},
     "DCGM exporter gpu-operator/e reports no DCGM_FI_DEV_FB_USED/DCGM_FI_DEV_FB_FREE samples"),
])
def test_every_unknown_says_why_in_one_line(row: dict, why: str) -> None:
    got = node_memory("n1", row)
    assert got["gpus"] == [] and got["unknown"] == why
