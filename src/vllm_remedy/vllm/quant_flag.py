"""What a typed ``--quantization`` does to a checkpoint, for the methods the memory model does not size: vLLM's
refusal where its source shows one on an NVIDIA card, else "cannot predict <method>: not modelled", never the
16-bit or fp8 size the flag does not produce (hostile review 15, H16).

Modelled (``MODELLED``): the methods ``quant_support`` judges against a checkpoint's ``quantization_config`` and, on a
checkpoint without one, fp8 (quantized online to 8 bits: ``Fp8Config.get_config_filenames()`` is [] and ``Fp8Config()``
is built, fp8.py@0.11.0 l.118-119), bitsandbytes (in-flight 4-bit, ``quant_cls.from_config({})``,
model_loader/weight_utils.py@0.11.0) and the AWQ / GPTQ family (their own file: "Cannot find the config file").
Every other name in a release's ``QUANTIZATION_METHODS`` (``arch_release.methods``) is judged here.

On a checkpoint without ``quantization_config``, ``get_quant_config`` (model_loader/weight_utils.py@0.5.5, @0.7.3,
@0.11.0 l.246-288, @0.34.0) builds ``quant_cls()`` when ``get_config_filenames()`` is empty, else reads the file it
names or raises ``ValueError(f"Cannot find the config file for {model_config.quantization}")``. Read per method:
- fbgemm_fp8: ``get_config_filenames()`` is [] and ``FBGEMMFp8Config.__init__(self, ignore_list, input_scale_ub)``
  (fbgemm_fp8.py@0.5.5 l.28/52, @0.11.0 l.32/55, @0.34.0 l.48/71): Python's TypeError, no start;
- ptpc_fp8 (registered 0.7.3-0.18.x): [] too (``PTPCFp8Config`` is an ``Fp8Config``), and its ``__init__`` raises
  "ptpc_fp8 quantization is supported only on ROCm." on any other platform (ptpc_fp8.py@0.7.3 l.36-38, @0.11.0
  l.38-40, @0.13.0 l.40-41, @0.18.0);
- moe_wna16: ``["quantize_config.json"]`` (moe_wna16.py@0.7.2 l.75-76, @0.11.0 l.84-85, @0.34.0 l.115): the file a
  GPTQ / AWQ checkpoint ships, which a checkpoint without ``quantization_config`` is taken not to (as for AWQ / GPTQ,
  ``quant_support``): "Cannot find the config file for moe_wna16".
Any other (experts_int8, quark, torchao, gguf, hqq, ModelOpt's without a section read, ...): not modelled. With a
checkpoint that states another method, the methods outside ``quant_support``'s judged set have overrides
(``override_quantization_method``) that were not read: not modelled either.
"""

from __future__ import annotations

from collections.abc import Sequence

from vllm_remedy.errors import UserError

Version = tuple[int, int, int]

#: Methods a typed ``--quantization`` is modelled for on a checkpoint without ``quantization_config``.
ONLINE = frozenset({"fp8", "bitsandbytes"})
#: Their own-file names (``quant_support``: "Cannot find the config file for awq").
_OWN_FILE = {"moe_wna16": "quantize_config.json (a GPTQ / AWQ checkpoint's file)"}
_TYPE_ERROR = {"fbgemm_fp8": ("FBGEMMFp8Config", "'ignore_list' and 'input_scale_ub'")}
PTPC_ROCM_ONLY = "ValueError: ptpc_fp8 quantization is supported only on ROCm."


def not_modelled(method: str, why: str) -> UserError:
    """The one line for a method the memory model does not size."""
    return UserError(f"cannot predict --quantization {method}: not modelled ({why}); confirm the start on one pod "
                     "before rolling it out")


def without_section(user: str, methods: Sequence[str]) -> str | None:
    """vLLM's refusal of ``--quantization user`` on a checkpoint without ``quantization_config`` (module docstring),
    None when the memory model sizes it (``ONLINE``); raises "cannot predict" for any other method, and for a name
    the release does not register (``methods``: its ``QUANTIZATION_METHODS``; argparse's choices or the model
    config refuse it first, ``cmdline.choices`` / ``quant_names``). The AWQ / GPTQ family is ``quant_support``'s and
    never reaches here."""
    if user in ONLINE:
        return None
    if user not in methods:
        raise not_modelled(user, "not one of this release's quantization methods")
    if user == "ptpc_fp8":
        return PTPC_ROCM_ONLY
    if user in _TYPE_ERROR:
        cls, args = _TYPE_ERROR[user]
        return f"TypeError: {cls}.__init__() missing 2 required positional arguments: {args}"
    if user in _OWN_FILE:
        return (f"ValueError: Cannot find the config file for {user} (the checkpoint's config.json has no "
                f"quantization_config, and the method reads {_OWN_FILE[user]})")
    if user.startswith("modelopt"):
        raise not_modelled(user, "no ModelOpt section or hf_quant_config.json was read for this checkpoint, so "
                                 "whether the repository ships the file ModelOpt's config reads is not known")
    raise not_modelled(user, "the memory model sizes a typed --quantization only for fp8, bitsandbytes and "
                             "checkpoints that state their method")


def against_section(user: str, method: str) -> UserError:
    """"cannot predict" for ``--quantization user`` on a checkpoint whose method is ``method``, where neither the
    override that could take it nor the mismatch refusal is modelled for that pair."""
    return not_modelled(user, f"on a {method} checkpoint: whether an override of vLLM's takes it or the model config "
                              "refuses the mismatch was not read for this pair")
