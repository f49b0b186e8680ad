"""Reading a user's YAML file (a game-day scenario, a rehearsal seed) with one-line errors naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from vllm_remedy.errors import UserError


def read_yaml(path: Path, what: str) -> Any:
    """The parsed document; UserError ``<path>: cannot read <what>: ...`` or ``<path>: not valid YAML: ...``."""
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
