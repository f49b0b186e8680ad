"""The words of an unknown ("cannot predict") finding and its fix line: "cannot predict" said once, and a fix that
names what is missing — the memory model's own limit (an architecture, a quantization method or reading it does not
size) is neither a config out of reach nor a flag vLLM rejects (hostile review 15, H11)."""

from __future__ import annotations

#: The fix for a start whose config was reached but whose architecture or quantization is not modelled.
NOT_MODELLED_FIX = ("the memory model does not size this architecture or quantization (the reason names it): confirm "
                    "the start on one pod (or the rehearsal cluster) before rolling it out")


def reason(said: str) -> str:
    """``said`` prefixed "cannot predict: " once: a reason that already says "cannot predict ..." is kept."""
    return said if said.startswith("cannot predict") else f"cannot predict: {said}"


def not_modelled(said: str) -> bool:
    """Whether the reason is the memory model's own limit (its words "not modelled" / "does not predict")."""
    return "not modelled" in said or "does not predict" in said


def fix(said: str, otherwise: str) -> str:
    """``NOT_MODELLED_FIX`` for the memory model's own limit, else ``otherwise``."""
    return NOT_MODELLED_FIX if not_modelled(said) else otherwise
