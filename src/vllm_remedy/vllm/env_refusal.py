"""``Refusal``: an env problem that is vLLM's refusal of the start (a prediction, ``config_refused``), as opposed to a
plain ``str`` problem, which says the start cannot be predicted. Its own module so every variable's reader
(``engine_env``, ``mla_env``) can return one without importing the other."""

from __future__ import annotations


class Refusal(str):
    """Why vLLM refuses the start for its env. A ``str`` so every reader of ``Resolved.env_problem`` keeps printing
    it."""
