"""The built-in default policy as a policy file would state it: what ``extends: default`` merges in when no
``default.yaml`` lies beside the extending file.

``policies/default.yaml`` is the repository's documented mirror of the default (``defaults.py``), and it is not
installed with the package (nor copied into the image): a model policy kept anywhere else — a team's repository, a
ConfigMap mounted for the CronJobs — writes ``extends: default`` as that file tells it to, and must get the default
the tool itself applies. Kept apart from ``defaults.py`` (which builds the ``Policy``) so that ``files``, below the
models, can read it: only the flag bounds differ from the models' field defaults, so they are all it states.
"""

from __future__ import annotations

from typing import Any

#: The name ``extends`` gives the built-in default, and where an error blames a key it set.
NAME = "default"
SOURCE = "<built-in default policy>"
#: The bounds default.yaml states under ``flags``, written as that file writes them.
FLAGS: dict[str, Any] = {
    "gpu-memory-utilization": {"min": 0.5, "max": 0.95},  # above 0.95 leaves nothing for CUDA graphs and NCCL
    "tensor-parallel-size": {"min": 1, "max": 8},  # one node's worth of GPUs
    "kv-cache-dtype": {"allowed": ["auto"]},  # fp8 only where a model policy allows and evaluated it
}


def mapping() -> dict[str, Any]:
    """The default policy's keys as ``extends`` merges them (a fresh copy: the merge must not change ours)."""
    return {"flags": {name: {k: list(v) if isinstance(v, list) else v for k, v in rule.items()}
                      for name, rule in FLAGS.items()}}
