"""Game-day scenarios: YAML → a validated, typed :class:`Scenario` (errors name the file and the key).

A scenario is one rehearsal of the Sev1: the world it needs, the fault (real API changes, all reversible),
what detection should classify, which deploys restore service, and what "restored" means. Paths in a
scenario (policy, deploys) are relative to the scenario file, so the shipped ``gameday/`` folder works from
any working directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_remedy.errors import UserError
from vllm_remedy.gameday.targets import ADAPTERS, Target, target_of
from vllm_remedy.sim.vllm_pod.reality import Reality, parse_reality
from vllm_remedy.vllm.outcomes import Failure
from vllm_remedy.yamlfile import read_yaml

Obj = dict[str, Any]
NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
#: A workload step is keyed by the target's kind word (``deployment:``, ``statefulset:``) and writes into it.
WORKLOAD_STEPS = tuple(ADAPTERS)
STEP_KINDS = (*WORKLOAD_STEPS, "nodes", "route", "delete-pods")
#: What a nodes step may set (cordon, taints): the game captures and restores exactly these.
NODE_FIELDS = ("spec.unschedulable", "spec.taints")
DETECT_KINDS = ("classification", "policy")
_TOP = {"name", "title", "description", "target", "policy", "sim-only", "world", "fault", "expect", "deploys",
        "success"}
_DURATION = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Step:
    """One reversible change through the API (world set-up or the fault itself).

    ``kind`` deployment (or the target's kind word, e.g. statefulset): ``set`` paths on the target
    (``a.b[name].c``; null deletes), ``annotations``,
    ``change_cause`` — one new revision. nodes: ``annotations`` and/or ``set`` (``spec.unschedulable``,
    ``spec.taints``: cordon a pool, change its taints) on every node matching ``selector``.
    route: ``set`` on the HTTPRoute ``name``. delete-pods: pods matching ``selector`` (the controller
    replaces them — "the pods restarted"). ``wait`` waits for the deployment to roll out afterwards.
    """

    kind: str
    what: str
    set: Obj = field(default_factory=dict)
    annotations: dict[str, str | None] = field(default_factory=dict)
    change_cause: str | None = None
    selector: str = ""
    name: str = ""
    wait: bool = False


@dataclass(frozen=True)
class Detection:
    """What detection must find: a startup-log classification, or a policy finding on a key."""

    kind: str  # "classification" | "policy"
    value: str


@dataclass(frozen=True)
class Success:
    """Criteria for "restored": checked on the final state; ``within`` in cluster seconds."""

    ready_replicas: int
    matches_policy: bool = True
    flags: dict[str, str | None] = field(default_factory=dict)  # None = flag must be absent
    gpu_product: str | None = None
    route_shifted: bool = False  # traffic went to the fallback backend while the primary was down
    within: float = 3600.0
    max_template_changes: int | None = None


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: target, world, fault, expected detection, deploys and success criteria; paths are
    already resolved against the scenario file, so the runner need not re-validate it."""

    name: str
    title: str
    description: str
    source: Path
    namespace: str
    deployment: str
    container: str | None
    policy: Path
    sim_only: bool
    seed: str
    objects: tuple[Obj, ...]
    world: tuple[Step, ...]
    known_good_current: bool
    fault: tuple[Step, ...]
    detection: Detection
    deploys: tuple[Path, ...]
    success: Success
    route: str | None = None  # HTTPRoute name (in the target namespace) the game watches
    kind: str = "deployment"  # the target's kind word; ``deployment`` above is its name for every kind
    reality: Reality | None = None  # world.reality / world.reality-seed: how far vLLM starts stray from the estimate

    @property
    def target(self) -> Target:
        """The workload the game faults, watches and restores."""
        return Target(self.kind, self.namespace, self.deployment)


def _err(where: str, message: str) -> UserError:
    return UserError(f"{where}: {message}")


def _mapping(value: Any, where: str, allowed: set[str] | None = None) -> Obj:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _err(where, f"expected a mapping, got {type(value).__name__}")
    if allowed is not None:
        extra = sorted(set(map(str, value)) - allowed)
        if extra:
            raise _err(f"{where}.{extra[0]}", f"unknown key; expected one of {', '.join(sorted(allowed))}")
    return value


def _text(value: Any, where: str, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise _err(where, "required, a non-empty string")
    return value


def duration(value: Any, where: str) -> float:
    """``90``, ``"30m"``, ``"1h30m"`` → seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    text = str(value).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise _err(where, f"{value!r} is not a duration such as 90s, 30m or 1h30m")
    return float(sum(int(n) * _UNITS[u] for n, u in parts))


def _step(raw: Any, where: str) -> Step:
    body = _mapping(raw, where, {"what", *STEP_KINDS})
    kinds = [k for k in STEP_KINDS if k in body]
    if len(kinds) != 1:
        raise _err(where, f"expected exactly one of {', '.join(STEP_KINDS)}")
    kind = kinds[0]
    spec = _mapping(body[kind], f"{where}.{kind}",
                    {"set", "annotations", "change-cause", "selector", "name", "wait"})
    sets = _mapping(spec.get("set"), f"{where}.{kind}.set")
    notes = _mapping(spec.get("annotations"), f"{where}.{kind}.annotations")
    for key, value in notes.items():
        if value is not None and not isinstance(value, str):
            raise _err(f"{where}.{kind}.annotations.{key}", "annotation values are strings (quote numbers)")
    if kind in WORKLOAD_STEPS and not sets and not notes:
        raise _err(f"{where}.{kind}", "expected set and/or annotations")
    if kind == "nodes" and (not spec.get("selector") or not (notes or sets)):
        raise _err(f"{where}.{kind}", "expected selector (a label selector) and annotations and/or set")
    if kind == "nodes" and sorted(set(map(str, sets)) - set(NODE_FIELDS)):
        bad = sorted(set(map(str, sets)) - set(NODE_FIELDS))[0]
        raise _err(f"{where}.{kind}.set.{bad}", f"nodes steps set only {', '.join(NODE_FIELDS)}")
    if kind == "route" and (not spec.get("name") or not sets):
        raise _err(f"{where}.{kind}", "expected name (an HTTPRoute in the target namespace) and set")
    if kind == "delete-pods" and not spec.get("selector"):
        raise _err(f"{where}.{kind}.selector", "required, a label selector such as app=llama-8b")
    return Step(kind=kind, what=_text(body.get("what"), f"{where}.what"), set=dict(sets),
                annotations={str(k): v for k, v in notes.items()},
                change_cause=spec.get("change-cause"), selector=str(spec.get("selector") or ""),
                name=str(spec.get("name") or ""), wait=bool(spec.get("wait", False)))


def _detection(raw: Any, where: str) -> Detection:
    body = _mapping(raw, where, set(DETECT_KINDS))
    if len(body) != 1:
        raise _err(where, f"expected exactly one of {', '.join(DETECT_KINDS)}")
    kind, value = next(iter(body.items()))
    value = _text(value, f"{where}.{kind}")
    if kind == "classification" and value not in {f.value for f in Failure}:
        raise _err(f"{where}.{kind}", f"{value!r} is not one of {', '.join(f.value for f in Failure)}")
    return Detection(kind, value)


def _success(raw: Any, where: str) -> Success:
    body = _mapping(raw, where, {"ready-replicas", "matches-policy", "flags", "gpu-product", "route-shifted",
                                 "within", "max-template-changes"})
    ready = body.get("ready-replicas")
    if not isinstance(ready, int) or isinstance(ready, bool) or ready < 0:
        raise _err(f"{where}.ready-replicas", "required, a whole number >= 0")
    flags = _mapping(body.get("flags"), f"{where}.flags")
    changes = body.get("max-template-changes")
    if changes is not None and (not isinstance(changes, int) or changes < 0):
        raise _err(f"{where}.max-template-changes", "expected a whole number >= 0")
    return Success(ready_replicas=ready, matches_policy=bool(body.get("matches-policy", True)),
                   flags={str(k).lstrip("-"): None if v is None else str(v) for k, v in flags.items()},
                   gpu_product=body.get("gpu-product"), route_shifted=bool(body.get("route-shifted", False)),
                   within=duration(body.get("within", "1h"), f"{where}.within"), max_template_changes=changes)


def _relative(base: Path, value: Any, where: str) -> Path:
    path = (base / _text(value, where)).resolve()
    if not path.is_file():
        raise _err(where, f"no file {path}")
    return path


def _seed(base: Path, value: Any, where: str) -> str:
    """A packaged seed's name as given; a YAML file relative to the scenario, like its policy and deploys."""
    text = str(value or "runbook")
    return str(_relative(base, text, where)) if text.endswith((".yaml", ".yml")) else text


def parse_scenario(data: Any, source: Path) -> Scenario:
    """Validate a parsed scenario; every error is one line naming ``source`` and the key."""
    label = str(source)
    top = _mapping(data, label, _TOP)
    name = _text(top.get("name"), f"{label}: name")
    if not NAME.fullmatch(name):
        raise _err(f"{label}: name", f"{name!r} must be lowercase letters, digits and '-'")
    target = _mapping(top.get("target"), f"{label}: target", {"namespace", "deployment", "kind", "name",
                                                                  "container", "route"})
    kind = str(target.get("kind") or "deployment")
    target_of(kind, str(target.get("namespace") or "llm"), "-", f"{label}: target.kind")
    if "name" in target and "deployment" in target:
        raise _err(f"{label}: target", "name the workload once: name (any kind) or deployment")
    world = _mapping(top.get("world"), f"{label}: world", {"seed", "objects", "steps", "known-good",
                                                                 "reality", "reality-seed"})
    objects = world.get("objects") or []
    if not isinstance(objects, list):
        raise _err(f"{label}: world.objects", "expected a list of {resource, object}")
    for i, obj in enumerate(objects):
        _mapping(obj, f"{label}: world.objects[{i}]", {"resource", "object"})
        if not obj.get("resource") or not isinstance(obj.get("object"), dict):
            raise _err(f"{label}: world.objects[{i}]", "expected resource (plural[.group]) and object (a manifest)")
    known_good = world.get("known-good")
    if known_good not in (None, "current"):
        raise _err(f"{label}: world.known-good", "expected 'current' (mark the running revision known-good)")
    if known_good and kind != "deployment":
        raise _err(f"{label}: world.known-good", f"marks a Deployment's ReplicaSet; the target is a {kind}")
    fault = top.get("fault")
    if not isinstance(fault, list) or not fault:
        raise _err(f"{label}: fault", "required, a list of steps (each a real, reversible API change)")
    steps = world.get("steps") or []
    if not isinstance(steps, list):
        raise _err(f"{label}: world.steps", "expected a list of steps")
    for where, step_list in (("world.steps", steps), ("fault", fault)):
        for i, raw in enumerate(step_list):
            wrong = [k for k in WORKLOAD_STEPS if k != kind and isinstance(raw, dict) and k in raw]
            if wrong:
                raise _err(f"{label}: {where}[{i}].{wrong[0]}", f"the target is a {kind}: write {kind}: here")
    deploys = top.get("deploys")
    if not isinstance(deploys, list) or not deploys:
        raise _err(f"{label}: deploys", "required, a list of pyinfra deploy files (relative to this file)")
    base = source.parent
    expect = _mapping(top.get("expect"), f"{label}: expect", {"detection"})
    if "detection" not in expect:
        raise _err(f"{label}: expect.detection", "required: {classification: <failure>} or {policy: <key>}")
    return Scenario(
        name=name, title=_text(top.get("title"), f"{label}: title"),
        description=_text(top.get("description"), f"{label}: description", required=False).strip(),
        source=source, namespace=str(target.get("namespace") or "llm"),
        deployment=str(target.get("name") or target.get("deployment") or "llama-8b"), container=target.get("container"),
        policy=_relative(base, top.get("policy"), f"{label}: policy"), sim_only=bool(top.get("sim-only", False)),
        seed=_seed(base, world.get("seed"), f"{label}: world.seed"), objects=tuple(objects),
        world=tuple(_step(s, f"{label}: world.steps[{i}]") for i, s in enumerate(steps)),
        known_good_current=known_good == "current",
        fault=tuple(_step(s, f"{label}: fault[{i}]") for i, s in enumerate(fault)),
        detection=_detection(expect["detection"], f"{label}: expect.detection"),
        deploys=tuple(_relative(base, d, f"{label}: deploys[{i}]") for i, d in enumerate(deploys)),
        success=_success(top.get("success"), f"{label}: success"),
        route=target.get("route"), kind=kind,
        reality=(parse_reality(world.get("reality"), world.get("reality-seed"), f"{label}: world")
                 if "reality" in world or "reality-seed" in world else None),
    )


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file."""
    source = Path(path)
    return parse_scenario(read_yaml(source, "scenario"), source)


def shipped_dir() -> Path:
    """The repository's ``gameday/`` folder (scenarios ship next to deploys/ and policies/)."""
    return Path(__file__).resolve().parents[3] / "gameday"


def find_scenario(ref: str, folder: Path | None = None) -> Path:
    """A scenario file path, or the name of a shipped scenario (``bad-rollout``)."""
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    folder = folder or shipped_dir()
    for candidate in shipped(folder):
        if ref in (candidate.stem, _bare(candidate)):
            return candidate
    names = ", ".join(_bare(p) for p in shipped(folder))
    raise UserError(f"scenario {ref!r}: no such file or shipped scenario (have: {names})")


def _bare(path: Path) -> str:
    """``01-bad-rollout.yaml`` → ``bad-rollout`` (the number only orders the files)."""
    return re.sub(r"^\d+-", "", path.stem)


def shipped(folder: Path | None = None) -> list[Path]:
    """Every shipped scenario file, in run order (file names start with their number)."""
    return sorted((folder or shipped_dir()).glob("*.yaml"))
