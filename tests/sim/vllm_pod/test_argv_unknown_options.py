"""A rehearsal pod given a long option its release's parser does not have refuses it as real vLLM does, through the
served rehearsal cluster and the official ``kubernetes`` client: argparse leaves the words over and ends with
``vllm serve: error: unrecognized arguments: --bogus-flag 1`` (``api_server.py: error: ...`` for the module), exit 2,
no engine line. The pod used to start with any option it had no rule for (``--bogus-flag 1`` on 0.9.2 and 0.28.0),
and with a dotted ``--hf-overrides.KEY V`` before 0.9.0, whose FlexibleArgumentParser does not fold dotted keys yet
(utils.py@0.8.5 only turns underscores into dashes; @0.9.0 folds ``--x.k v`` into ``--x <json>``). The options come
from the rehearsal's own table of every release's option strings (``argv_options``, vllm_options.json)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from fixtures.sim_world import gpu_node
from vllm_remedy.sim.cluster import Cluster
from vllm_remedy.sim.server import SimServer
from vllm_remedy.sim.vllm_pod.reality import EXACT

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
SERVE = ["vllm", "serve"]
MODULE = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
USAGE = "usage: vllm serve [model_tag] [options]"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    """One served cluster with an 8-card L40S node, vLLM pods starting exactly as estimated."""
    cluster = Cluster("a", speed=600, reality=EXACT)
    cluster.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llm"},
                                        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    cluster.store.create("nodes", gpu_node("gpu-1", gpus=8))
    cluster.start()
    server = SimServer([cluster])
    server.start()
    kubeconfig = server.write_kubeconfig(Path(tmp_path_factory.mktemp("kube")) / "kubeconfig")
    yield client.CoreV1Api(config.new_client_from_config(str(kubeconfig)))
    cluster.stop()
    server.stop()


def _run(api: client.CoreV1Api, name: str, tag: str, command: list[str], args: list[str]) -> tuple[str, int | None]:
    """Create the pod; its log and exit code once it crash-loops, or ("", None) once it serves (its readiness probe
    passes: a container without one is ready as soon as it runs, even one about to exit 2)."""
    container = {"name": "vllm", "image": f"vllm/vllm-openai:{tag}", "command": command, "args": args,
                 "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    api.create_namespaced_pod("llm", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": {"containers": [container]}})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = api.read_namespaced_pod(name, "llm").status
        state = (status.container_statuses or [None])[0]
        if state is not None and state.ready:
            return "", None
        if state is not None and state.last_state and state.last_state.terminated:
            log = api.read_namespaced_pod_log(name, "llm", container="vllm", previous=True)
            return log, state.last_state.terminated.exit_code
        time.sleep(0.1)
    raise AssertionError(f"{name}: neither served nor ended: {api.read_namespaced_pod(name, 'llm').status}")


@pytest.mark.parametrize("tag", ["v0.9.2", "v0.28.0"])
def test_an_unknown_option_is_refused_by_vllm_serve(api, tag):
    log, code = _run(api, f"bogus-{tag.replace('.', '-')}", tag, SERVE, [LLAMA, "--bogus-flag", "1"])
    assert code == 2
    assert log.splitlines() == [USAGE, "vllm serve: error: unrecognized arguments: --bogus-flag 1"], log


def test_the_api_server_module_refuses_it_under_its_own_name(api):
    """``python -m vllm.entrypoints.openai.api_server``: argparse's prog is the script's name; the model is --model
    (no model_tag positional before 0.11.0), so the value word is left over too."""
    log, code = _run(api, "bogus-module", "v0.9.2", MODULE, ["--model", LLAMA, "--bogus_flag=1", "stray"])
    assert code == 2
    assert log.splitlines()[-1] == "api_server.py: error: unrecognized arguments: --bogus-flag=1 stray", log


def test_an_option_a_release_dropped_is_refused_there(api):
    """--disable-log-requests: engine/arg_utils.py@0.16.0 keeps it (deprecated), no file of 0.17.0's parser has it."""
    assert _run(api, "dlr-0-16", "v0.16.0", SERVE, [LLAMA, "--disable-log-requests"]) == ("", None)
    log, code = _run(api, "dlr-0-17", "v0.17.0", SERVE, [LLAMA, "--disable-log-requests"])
    assert (code, log.splitlines()[-1]) == (2, "vllm serve: error: unrecognized arguments: --disable-log-requests")


def test_an_abbreviation_of_one_option_is_that_option_and_of_several_is_refused(api):
    """argparse's allow_abbrev (no release read turns it off): a unique prefix is the option, a shared one is
    ``ambiguous option`` before anything is converted."""
    assert _run(api, "abbrev-one", "v0.9.2", SERVE, [LLAMA, "--max-model", "8192"]) == ("", None)
    log, code = _run(api, "abbrev-two", "v0.9.2", SERVE, [LLAMA, "--max-num", "8", "--max-model-len", "16Ki"])
    assert code == 2
    head, _sep, matches = log.splitlines()[-1].partition(" could match ")
    assert head == "vllm serve: error: ambiguous option: --max-num"
    assert sorted(matches.split(", ")) == ["--max-num-batched-tokens", "--max-num-partial-prefills", "--max-num-seqs"]


def test_dotted_hf_overrides_before_0_9_is_an_unknown_option(api):
    """0.8.5's FlexibleArgumentParser dashes the whole name and argparse has no such option; 0.9.0 folds it into
    ``--hf-overrides {"num_hidden_layers": "16"}``, which it has."""
    log, code = _run(api, "dotted-0-8-5", "v0.8.5", SERVE, [LLAMA, "--hf-overrides.num_hidden_layers", "16"])
    assert code == 2
    assert log.splitlines() == [USAGE, "vllm serve: error: unrecognized arguments: "
                                       "--hf-overrides.num-hidden-layers 16"], log


def test_the_table_is_the_rehearsals_own():
    """Built by scripts/sim_vllm_options.py (regular expressions over each wheel), not the tools' flag table."""
    from vllm_remedy.sim.vllm_pod import argv_options

    with open(argv_options.__file__, encoding="utf-8") as fh:
        imports = [line for line in fh if line.startswith(("import ", "from "))]
    assert not [line for line in imports if "vllm_remedy" in line], imports
    assert "--bogus-flag" not in argv_options.options((0, 28, 0), True)
    assert "--disable-log-requests" in argv_options.options((0, 16, 0), True)
