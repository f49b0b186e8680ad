"""`diagnose` on Ray's placement-group failure: a world size (TP x PP) beyond the GPUs the Ray cluster has ends after
the 1800 s wait in ``_wait_until_pg_ready``'s words (executor/ray_utils.py@0.8.5; v1/executor/ray_utils.py@0.13.0
names the GPUs required), on releases with no config check of the world size or with the Ray backend named. It is the
layout's failure (``world_size_exceeds_gpus``: restore rolls back), not an unclassified crash."""

from __future__ import annotations

import json

import pytest

HEAD = ("INFO 12-06 01:00:00 [__init__.py:239] Automatically detected platform cuda.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/executor/ray_utils.py", line 245, in '
        "_wait_until_pg_ready\n"
        "    raise ValueError(\n")
OLD = ("ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0, 'node:10.0.0.5': 0.001}, "
       "{'GPU': 1.0}, {'GPU': 1.0}, {'GPU': 1.0}] within 1800 seconds. See `ray status` and `ray list nodes` to make "
       "sure the cluster has enough resources.\n")
NEW = ("ValueError: Cannot provide a placement group requiring 4 GPUs (placement_group_specs=[{'GPU': 1.0, "
       "'node:10.0.0.5': 0.001}, {'GPU': 1.0}, {'GPU': 1.0}, {'GPU': 1.0}]) within 1800 seconds.\n"
       "Tensor parallel size may exceed available GPUs in your cluster. Check resources with `ray status` and "
       "`ray list nodes`.\n"
       "If running on K8s with limited GPUs, consider reducing --tensor-parallel-size to match available GPU "
       "resources.\n")


@pytest.mark.parametrize(("banner", "error", "world"), [
    ("INFO 12-06 01:00:00 [api_server.py:1043] vLLM API server version 0.8.5.post1\n", OLD, None),
    ("INFO 12-06 01:00:00 [api_server.py:1043] vLLM API server version 0.13.0\n", NEW, 4),
])
def test_the_placement_group_failure_is_the_layouts(cli, tmp_path, banner, error, world):
    log = tmp_path / "vllm.log"
    log.write_text(banner + HEAD + error)
    got = cli("diagnose", "--log", str(log), "-o", "json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["failure"] == "world_size_exceeds_gpus", data
    assert data["failure_detail"].get("world_size") == world, data["failure_detail"]
