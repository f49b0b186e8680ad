"""Write ``src/vllm_remedy/vllm/memory/awq_marlin_table.py``: the AWQ Marlin load replay (``awq_marlin_load.simulate``)
of each catalog family as an AWQ checkpoint, of the calibration cases' AWQ models and of the popular public AWQ
checkpoints in scripts/awq_marlin_checkpoints.yaml (each with its Hub config URL), at TP 1, 2, 4 and 8, 16-bit
activations.

Why a table: the replay runs every layer (~10 ms for 64 layers in a fresh process, against the 5 ms an estimate may
take), and its per-layer increments are not periodic over a model's depth (Qwen3-32B-AWQ: the 20 MiB segments' fill
repeats every 10 layers, the 2 MiB segments' changes after 18), so it cannot be cut short exactly. The table holds
what the replay computes, nothing else; tests/vllm/memory/test_awq_marlin_table.py replays every entry. A shape
outside it is replayed once per machine (``awq_marlin_memo``). Re-run after any change to the replay::

    python scripts/awq_marlin_table.py          # write the table
    python scripts/awq_marlin_table.py --check  # exit 1 when it differs from the replay
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from vllm_remedy.vllm import catalog  # noqa: E402
from vllm_remedy.vllm.memory.awq_marlin_load import ReplayInputs, applies, replay_inputs, simulate  # noqa: E402

TABLE = ROOT / "src/vllm_remedy/vllm/memory/awq_marlin_table.py"
CHECKPOINTS = ROOT / "scripts/awq_marlin_checkpoints.yaml"
TPS = (1, 2, 4, 8)
DTYPE_BYTES = 2
HEADER = '''"""The AWQ Marlin load replay (``awq_marlin_load.simulate``) of the catalog's, the calibration cases'
and popular public AWQ checkpoints (scripts/awq_marlin_checkpoints.yaml): (requested, allocated, reserved) bytes by
the replay's inputs. Written by scripts/awq_marlin_table.py, never by hand; tests/vllm/memory/test_awq_marlin_table.py
replays every entry. It spares a first estimate the replay.
"""

REPLAYED: dict[tuple[int | bool, ...], tuple[int, int, int]] = {
'''


def checkpoints() -> list[catalog.ModelSpec]:
    """The popular public AWQ checkpoints, from their published config.json keys."""
    listed = yaml.safe_load(CHECKPOINTS.read_text())["checkpoints"]
    return [catalog.ModelSpec.from_hf_config(entry["config"], entry["repo"]) for entry in listed]


def models() -> list[catalog.ModelSpec]:
    """Each catalog family as a 4-bit AWQ checkpoint (what an ``-AWQ`` name resolves to), every calibration case's
    model (catalog name or inline config) and the listed public checkpoints."""
    specs = [spec.quantized("awq", 4) for spec in catalog._model_index().values()] + checkpoints()
    for path in sorted((ROOT / "tests/data/calibration").glob("*.yaml")):
        case = yaml.safe_load(path.read_text())
        if "model_config" in case:
            specs.append(catalog.ModelSpec.from_hf_config(case["model_config"], case["model"],
                                                          case.get("model_params_b")))
        else:
            specs.append(catalog.model(case["model"]))
    return specs


def entries() -> dict[ReplayInputs, tuple[int, int, int]]:
    """Every replayable (model, TP) at 16-bit activations; capability and release only gate ``applies``."""
    keys = {replay_inputs(m, tp, DTYPE_BYTES) for m in models() for tp in TPS
            if applies(m, None, (8, 9), (0, 28, 0), tp)}
    return {key: simulate(key) for key in sorted(keys)}


def render(table: dict[ReplayInputs, tuple[int, int, int]]) -> str:
    lines = [f"    {tuple(key)!r}:\n        {value!r},\n" for key, value in table.items()]
    return HEADER + "".join(lines) + "}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render(entries())
    if args.check:
        sys.exit(0 if TABLE.read_text() == text else 1)
    TABLE.write_text(text)


if __name__ == "__main__":
    main()
