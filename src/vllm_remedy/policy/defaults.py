"""The shipped default policy, owned here; ``policies/default.yaml`` is its documented mirror.

Every policy default has one owner:

* What a policy gets for a key it leaves out is the field default on the models (``sections.py``,
  ``known_good.py``, ``flags.py``, ``model.py``): peak_concurrency 8, enforce_eager 2h, gitops refuse, ...
  ``Policy()`` is exactly those.
* What the default policy *states* beyond them is :data:`BASELINE_FLAGS`, the flag bounds every
  deployment must meet. They are not ``FlagRules`` field defaults on purpose: a policy that does not
  ``extends: default`` must stay unbounded there (e.g. kv-cache-dtype ``[auto]`` would refuse fp8 to a
  standalone policy that allows it).

:data:`DEFAULT_POLICY` is the two together. ``tests/policy/test_defaults.py`` proves default.yaml equals
it field by field and spells out every key, so the file cannot drift from the code. The planner reads
it when it has no policy (``remedies/budget/limits.py``) instead of keeping copies.

vLLM's own defaults and hardware facts are not policy: they stay in ``vllm/`` (catalog, memory settings),
because they describe what vLLM and the cards do, not what an operator allows.
"""

from __future__ import annotations

from . import builtin
from .flags import FlagRules
from .model import Policy

#: The bounds default.yaml states under ``flags`` (written as that file writes them in ``builtin``, which
#: ``extends: default`` also reads where no default.yaml lies beside the policy).
BASELINE_FLAGS = FlagRules.model_validate(builtin.FLAGS)

#: ``policies/default.yaml`` as an object (its ``description`` prose aside).
DEFAULT_POLICY = Policy(flags=BASELINE_FLAGS)
DEFAULT_POLICY._name = builtin.NAME
DEFAULT_POLICY._source = builtin.SOURCE
