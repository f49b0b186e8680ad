"""predict_template judges a single pod as vLLM starts it: pipeline stages are "cannot predict" (they were folded into
the tensor-parallel size, a figure for every kind), and an engine wider than the container's GPU limit is a certain
failure (it was sized as a fit). A Ray group's leader (``--distributed-executor-backend ray``, a LeaderWorkerSet's)
keeps the group sizing: TP × PP over the group's GPUs, its own limit saying nothing."""

from __future__ import annotations

from typing import Any

from vllm_remedy.remedies.predict import failed_prediction, predict_template

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _template(*args: str, gpus: str = "1") -> dict[str, Any]:
    return {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve"],
                                     "args": [LLAMA, "--max-model-len", "8192", *args],
                                     "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}


def test_tp_2_on_one_gpu_is_a_certain_failure() -> None:
    got = predict_template(_template("--tensor-parallel-size", "2"))
    assert got.outcome == "world_size_exceeds_gpus" and got.estimate is None
    assert "world size 2 (TP 2 × PP 1) is larger than the 1 GPU(s)" in (failed_prediction(got) or "")
    assert got.line().startswith("prediction on NVIDIA-L40S: world_size_exceeds_gpus — world size 2")


def test_a_single_pods_stages_cannot_be_predicted() -> None:
    got = predict_template(_template("--pipeline-parallel-size", "2", gpus="2"))
    assert got.estimate is None and "pipeline parallel is not modelled" in got.note, got
    assert failed_prediction(got) is None


def test_a_ray_group_leader_keeps_the_group_sizing() -> None:
    leader = _template("--pipeline-parallel-size", "2", "--distributed-executor-backend", "ray")
    assert predict_template(leader).outcome == "fits"
    assert predict_template(leader, group=False).outcome == "world_size_exceeds_gpus"
    assert predict_template(_template("--tensor-parallel-size", "2"), group=True).outcome == "fits"
