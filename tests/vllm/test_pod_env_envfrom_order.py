"""envFrom order (hostile review, argparse round 2, finding 3): Kubernetes applies ``envFrom`` sources in order, a later
source overwriting a key an earlier one set, then every ``env`` entry over all of them (kubelet_pods.go
``makeEnvironmentVariables``). A Secret or an unchecked ConfigMap listed after the ConfigMap that sets a variable may
reset it: unknown, never the earlier value. One listed before it, one whose ``prefix`` the name lacks, and an ``env``
entry after all leave it known. The same rule holds for ``$(X)`` in args."""

from __future__ import annotations

import pytest

from vllm_remedy.vllm import pod_env
from vllm_remedy.vllm.cmdline import find_server

V1 = "VLLM_USE_V1"
MAPS = {"b": {V1: "0"}}
CM = {"configMapRef": {"name": "b"}}
SECRET = {"secretRef": {"name": "sec"}}


def read(env_from: list, env: list | None = None) -> pod_env.EnvValue:
    return pod_env.read({"command": ["vllm", "serve", "m"], "envFrom": env_from, "env": env or []}, V1, MAPS)


@pytest.mark.parametrize(("later", "says"), [
    (SECRET, "Secret sec"), ({"configMapRef": {"name": "other"}}, "ConfigMap other"),
    ({**SECRET, "prefix": "VLLM_"}, "Secret sec"),
])
def test_a_later_source_that_may_reset_it_makes_it_unknown(later, says):
    got = read([CM, later])
    assert got.value is None and got.unknown is not None, got
    assert says in got.unknown and "later envFrom source wins" in got.unknown, got.unknown


@pytest.mark.parametrize("sources", [[SECRET, CM], [CM, {**SECRET, "prefix": "HF_"}]])
def test_a_source_that_cannot_reset_it_leaves_it_known(sources):
    assert read(sources) == pod_env.EnvValue(V1, "0")


def test_a_secret_alone_is_unknown_and_env_after_envfrom_decides():
    assert "Secret sec" in read([SECRET]).unknown
    assert read([CM, SECRET], [{"name": V1, "value": "1"}]) == pod_env.EnvValue(V1, "1")


def test_args_expansion_follows_the_same_order():
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "envFrom": [{"configMapRef": {"name": "b"}},
                                                                                  SECRET],
                 "args": ["--model", "m", "--max-model-len", "$(LEN)"]}
    maps = {"b": {"LEN": "4096"}}
    assert pod_env.expand_arg(container, "$(LEN)", maps) == "$(LEN)"
    assert pod_env.expand_arg({**container, "envFrom": [SECRET, CM]}, "$(LEN)", maps) == "4096"
    assert find_server({"containers": [container]}).flags["max-model-len"] == "$(LEN)"
