"""drift/pyinfra_costs.py answers three of pyinfra's per-host lookups once per run: the answers must be pyinfra's
own, and everything must be back as it was afterwards (pyinfra is pinned to 3.10; a new layout fails here)."""

from __future__ import annotations

from typing import get_type_hints

from pyinfra.api import Config, State, arguments, connectors, facts
from pyinfra.api import inventory as pyinfra_inventory
from pyinfra.api.inventory import Inventory

from vllm_remedy.connectors.k8s import K8sConnector
from vllm_remedy.drift.pyinfra_costs import (
    connectors_listed_once,
    facts_read_once,
    global_arguments_typed_once,
    host_data_merged_once,
)


def test_connectors_are_pyinfras_own_and_restored() -> None:
    before = pyinfra_inventory.get_all_connectors, pyinfra_inventory.get_execution_connectors
    with connectors_listed_once():
        assert pyinfra_inventory.get_all_connectors() == connectors.get_all_connectors()
        assert pyinfra_inventory.get_execution_connectors() == connectors.get_execution_connectors()
        assert pyinfra_inventory.get_all_connectors()["k8s"] is K8sConnector
    assert (pyinfra_inventory.get_all_connectors, pyinfra_inventory.get_execution_connectors) == before


def test_global_argument_hints_are_pyinfras_own_and_restored() -> None:
    before = arguments.all_global_arguments, facts.all_global_arguments
    with global_arguments_typed_once():
        hints = arguments.all_global_arguments()
        assert hints == list(get_type_hints(arguments.AllArguments).items()) == facts.all_global_arguments()
        hints.clear()  # a caller's list is its own
        assert arguments.all_global_arguments()
    assert (arguments.all_global_arguments, facts.all_global_arguments) == before


def test_merged_host_data_answers_as_the_waterfall_does() -> None:
    inventory = Inventory((["a", "b"], {"level": "global", "only_global": 1}),
                          override_data={"forced": "override"},
                          web=(["a"], {"level": "web", "web": True, "forced": "web"}),
                          db=([("b", {"level": "host-b"})], {"level": "db"}))
    State(inventory, Config())
    keys = ["level", "only_global", "forced", "web", "_sudo", "missing"]
    hosts = list(inventory)

    def seen() -> list[dict[str, object]]:
        return [{k: getattr(h.data, k, "<none>") for k in keys} for h in hosts]

    expected = seen()
    assert expected[0]["level"] == "web" and expected[1]["level"] == "host-b" and expected[0]["forced"] == "override"
    layouts = [h.data.__dict__["datas"] for h in hosts]
    with host_data_merged_once(hosts):
        assert seen() == expected
        hosts[0].data.level = "set during the run"  # an operation's own data still wins
        assert hosts[0].data.level == "set during the run"
    assert [h.data.__dict__["datas"] for h in hosts] == layouts
    assert hosts[0].data.level == "set during the run"


def test_facts_read_once_per_host_each_caller_with_its_own_copy() -> None:
    inventory = Inventory((["a", "b"], {}))
    State(inventory, Config())
    hosts = list(inventory)
    reads: list[tuple[str, str]] = []

    def reader(name: str) -> object:
        def get_fact(fact: str, *args: object, **kwargs: object) -> object:
            reads.append((name, fact))
            return None if fact == "Failing" else {"host": name, "fact": fact, "items": [1, 2]}
        return get_fact

    for host in hosts:
        host.get_fact = reader(host.name)  # stands in for pyinfra's reader (what is counted is the wrapper)
    with facts_read_once(hosts, lambda h: h.name == "a"):
        first = hosts[0].get_fact("Deployment")
        first["items"].append(3)  # a caller's change stays its own
        assert hosts[0].get_fact("Deployment") == {"host": "a", "fact": "Deployment", "items": [1, 2]}
        assert hosts[0].get_fact("Deployment", logs="all") == hosts[0].get_fact("Deployment", logs="all")
        assert hosts[0].get_fact("Failing") is None and hosts[0].get_fact("Failing") is None
        hosts[1].get_fact("Deployment")
        hosts[1].get_fact("Deployment")
    assert reads == [("a", "Deployment"), ("a", "Deployment"), ("a", "Failing"), ("a", "Failing"),
                     ("b", "Deployment"), ("b", "Deployment")]
