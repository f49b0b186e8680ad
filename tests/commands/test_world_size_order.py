"""`check` and the rehearsal pod agree on the refusal vLLM prints first when a pod's GPUs cannot hold its engine (TP ×
PP above ``nvidia.com/gpu``) and another check refuses the start too: the model config's length before the world size
on every release; from 0.12.0 ``ParallelConfig``'s world size before the scheduler's batch and the heads (0.11.0's
executor after them). And the world size in each release's own words (config/parallel.py@0.12.0 "Tensor parallel
size ...", @0.13.0 on "World size ... in this node."; before 0.12.0 Ray's placement group). Before, `check` named the
world size first whatever else refused, in 0.13's words without "in this node." on every release; and the pod quoted
0.13's words on 0.11 and 0.12 too. The pod now prints each release's refusal as vLLM does: pydantic's "Value error,
..." from 0.12.0, Ray's ValueError after its 2550 s (cluster time) wait before; `check` quotes vLLM's words up to where
they stop depending on the pod (its IP in Ray's specs) or on advice it leaves out (0.13's two lines on
--distributed-executor-backend / --nnodes, Ray's `ray status` hint)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
import yaml

from conftest import run_cli
from fixtures.sim_world import l40s_pod_cluster
from fixtures.vllm_deployment import LLAMA

BATCH = ["--max-model-len", "16384", "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"]
SHORT = ["--max-model-len", "8192"]
LONG = ["--max-model-len", "200000"]  # Llama-3.1-8B: 131072 positions
V0 = {"VLLM_USE_V1": "0"}  # 0.8.5's V0 scheduler refuses the batch below the length

LENGTH = "--max-model-len 200,000 is above the model's 131,072"  # the tools' words (``model_len.refusal``)
HEADS = "ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3)."
BATCH_WORDS = "ValueError: max_num_batched_tokens (4096) is smaller than max_model_len (16384)."
WORLD_13 = "ValueError: World size ({n}) is larger than the number of available GPUs (1) in this node."
WORLD_12 = "ValueError: Tensor parallel size ({n}) cannot be larger than the number of available GPUs (1)."
RAY_11 = ("ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0, 'node:<pod IP>': "
          "0.001}, {'GPU': 1.0}] within 1800 seconds.")

# name: (tag, args, env, what vLLM prints first, the words that name it)
CASES = {
    "world+length 0.14.0": ("v0.14.0", [*LONG, "-tp", "2"], {}, "length", LENGTH),
    "world+length 0.11.0": ("v0.11.0", [*LONG, "-tp", "2"], {}, "length", LENGTH),
    "world+heads 0.11.0": ("v0.11.0", [*SHORT, "-tp", "3"], {}, "heads", HEADS),
    "world+heads 0.12.0": ("v0.12.0", [*SHORT, "-tp", "3"], {}, "world", WORLD_12.format(n=3)),
    "world+heads 0.14.0": ("v0.14.0", [*SHORT, "-tp", "3"], {}, "world", WORLD_13.format(n=3)),
    "world+batch 0.14.0": ("v0.14.0", [*BATCH, "-tp", "2"], {}, "world", WORLD_13.format(n=2)),
    "world+batch 0.8.5": ("v0.8.5", [*BATCH, "-tp", "2"], V0, "batch", BATCH_WORDS),
    "world 0.11.0": ("v0.11.0", [*SHORT, "-tp", "2"], {}, "world", RAY_11),
    "world 0.12.0": ("v0.12.0", [*SHORT, "-tp", "2"], {}, "world", WORLD_12.format(n=2)),
    "world 0.14.0": ("v0.14.0", [*SHORT, "-tp", "2"], {}, "world", WORLD_13.format(n=2)),
}
# what names each refusal in the pod's last line, whatever the release's words
MARKS = {"length": ("max_model_len (200000)",), "heads": ("attention heads",), "batch": ("max_num_batched_tokens",),
         "world": ("available GPUs", "placement group")}
NOTES: dict[str, list[str]] = {}


def container(tag: str, args: list[str], env: dict[str, str]) -> dict:
    return {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": ["vllm", "serve"], "args": [LLAMA, *args],
            "env": [{"name": k, "value": v} for k, v in env.items()], "ports": [{"containerPort": 8000}],
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def _name(case: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", case.lower()).strip("-")


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every case one Deployment of one file, judged by one real `check -o json` run: the start finding's reason by
    case (and its notes, by case, in ``NOTES``)."""
    docs = []
    for case, (tag, args, env, _, _) in CASES.items():
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": _name(case), "namespace": "default"},
                     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llm"}},
                              "template": {"metadata": {"labels": {"app": "llm"}},
                                           "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                                                    "containers": [container(tag, args, env)]}}}})
    path = tmp_path_factory.mktemp("world-order") / "all.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    got = run_cli("check", "-f", str(path), "-o", "json")
    assert got.returncode == 1, got.stdout + got.stderr
    items = {item["name"]: item for item in json.loads(got.stdout)["items"]}
    out = {}
    for case in CASES:
        starts = [f["reason"] for f in items[_name(case)]["findings"] if f["check"] == "start"]
        assert len(starts) == 1, items[_name(case)]["findings"]
        out[case] = starts[0]
        NOTES[case] = items[_name(case)]["notes"]
    return out


@pytest.fixture(scope="module")
def pod_lines() -> Iterator[dict[str, str]]:
    """Every case one rehearsal pod of one in-process cluster, crash-looping: the last line of its vLLM's log (the
    exception it ends with), without the process's prefix; for the length, the pydantic error's own line."""
    with l40s_pod_cluster(len(CASES)) as cluster:  # a GPU each
        for case, (tag, args, env, _, _) in CASES.items():
            cluster.store.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                          "metadata": {"name": _name(case), "namespace": "llm"},
                                          "spec": {"containers": [container(tag, args, env)]}})

        def status(name: str) -> dict:
            found = cluster.store.get("pods", "llm", name)
            return next(iter((found.get("status") or {}).get("containerStatuses") or []), {})

        # a run ended and restarted (Ray's 2550 s wait restarts without CrashLoopBackOff's growing delay)
        assert cluster.wait_for(lambda: all((status(_name(c)).get("restartCount") or 0) >= 1 for c in CASES), 20), \
            {c: status(_name(c)) for c in CASES}
        lines = {}
        for case in CASES:
            ip = cluster.store.get("pods", "llm", _name(case))["status"]["podIP"]
            log = cluster.read_log("llm", _name(case), previous=True).replace(f"'node:{ip}'", "'node:<pod IP>'")
            log = log.splitlines()
            said = [ln for ln in log if "Value error, " in ln] or log[-1:]  # pydantic's line, then its help line
            line = re.sub(r"^\([^)]*pid=\d+\) ", "", re.sub(r"\x1b\[[0-9;]*m", "", said[-1]))
            lines[case] = line.replace("  Value error, ", "").split(" [type=")[0]
        yield lines


@pytest.mark.parametrize("case", CASES)
def test_check_names_the_refusal_vllm_prints_first(checked, case):
    *_, first, words = CASES[case]
    reason = checked[case]
    assert words in reason, reason
    others = [m for k, marks in MARKS.items() if k != first and k != "length" for m in marks]
    assert not any(m in reason for m in others), reason
    # a refusal before the world size: the world size is still said, as what stops the start next
    assert first == "world" or any(n.startswith("then, that fixed: world size") for n in NOTES[case]), NOTES[case]


@pytest.mark.parametrize("case", CASES)
def test_the_pod_ends_with_the_same_refusal(pod_lines, case):
    *_, first, _ = CASES[case]
    assert any(m in pod_lines[case] for m in MARKS[first]), pod_lines[case]


@pytest.mark.parametrize("case", [c for c, (*_, first, _) in CASES.items()
                                  if first != "length"])  # the length is said in the tools' own words
def test_checks_words_are_the_pods_last_line(checked, pod_lines, case):
    """The pod's line is in check's reason, or check's words open it (what follows is advice check leaves out)."""
    line, words = pod_lines[case], CASES[case][-1]
    assert words in checked[case], checked[case]
    assert line in checked[case] or line.removeprefix("ValueError: ").startswith(
        words.removeprefix("ValueError: ")), (line, checked[case])


@pytest.mark.parametrize(("version", "words"), [
    ((0, 6, 4), "ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement "
                "group."),  # executor/ray_utils.py@0.6.4.post1: at once
    ((0, 6, 5), RAY_11),  # from 0.6.5 Ray waits 1800 s for the placement group
    ((0, 11, 0), RAY_11),
    ((0, 12, 0), WORLD_12.format(n=2)),
    ((0, 13, 0), WORLD_13.format(n=2)),
    (None, WORLD_13.format(n=2)),
])
def test_the_world_size_words_by_release(version, words):
    from vllm_remedy.vllm.parallel import world_size_words  # new here: the module stays importable on main

    assert world_size_words(2, 1, version) == words


@pytest.mark.parametrize(("stage", "version", "first"), [
    ("len", (0, 12, 0), True), ("env", (0, 12, 0), True), ("batch", (0, 12, 0), False),
    ("heads", (0, 12, 0), False), ("qconfig", (0, 14, 0), False), ("batch", (0, 11, 0), True),
    ("heads", (0, 11, 0), True), ("env_late", (0, 11, 0), True), ("weights", (0, 11, 0), False), (None, None, False),
])
def test_what_speaks_before_the_world_size(stage, version, first):
    from vllm_remedy.vllm.parallel import refused_before_world_size

    assert refused_before_world_size(stage, version) is first
