"""Which model a policy's ``model_config`` is of: it stands in for that model only (hostile review 15b, F15).

A policy covers every Deployment its ``target`` names (a namespace-wide policy, the in-cluster CronJob's
``--policy DIR``), and its ``model_config`` is the config.json of one model. Applied to whatever model a pod names,
a 70B repository id was sized from a 1.7B config and passed as "fits". The config stands in for a model when:

- the model is a local path (``--model /models/llama``, a volume this tool cannot read): the policy's model, the
  main use of ``model_config``;
- the policy names the model: ``model_config.model``, else ``target.models`` (the Deployments it covers serve those);
- else the config's own ``_name_or_path`` (what ``save_pretrained`` wrote) is that repository id.

Otherwise the prediction is "cannot predict", saying which model the config is of and which the pod serves. Hub ids
are compared without case, as the Hub resolves them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PolicyCopy:
    """A policy's ``model_config`` reader (``hub.Fallback``'s callable) that knows which models it is of."""

    read: Callable[[], Mapping[str, Any]]
    #: the models the policy names it for: ``model_config.model``, else ``target.models``; () when it names none
    models: tuple[str, ...] = ()

    def __call__(self) -> Mapping[str, Any]:
        return self.read()

    def not_for(self, model_id: str, config: Mapping[str, Any], in_pod: bool) -> str | None:
        """Why the config does not stand in for ``model_id`` (None: it does). ``model_id`` is a repository id."""
        serves = f"the pod serves {model_id}" if in_pod else f"the model is {model_id}"
        if self.models:
            if _same(model_id, *self.models):
                return None
            return f"the policy's model_config is for {', '.join(self.models)}, {serves}"
        named = config.get("_name_or_path") if isinstance(config, Mapping) else None
        if isinstance(named, str) and named.strip():
            if _same(model_id, named.strip()):
                return None
            return (f"the policy's model_config is for {named.strip()} (its _name_or_path), {serves}; name the model "
                    "it is of in model_config.model")
        return (f"the policy's model_config names no model (model_config.model, target.models, nor its "
                f"_name_or_path) and {serves}: name the model it is of in model_config.model")


def _same(model_id: str, *names: str) -> bool:
    return model_id.strip().casefold() in {n.strip().casefold() for n in names}
