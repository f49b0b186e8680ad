"""Where in ray_utils.py each line Ray's executor logs while it waits for a placement group comes from, by release.

The rehearsal pod prints those lines (``config_order.ray_wait_logs`` up to 0.11, ``ray_v1.waits`` from 0.12.0) with
vLLM's ``[ray_utils.py:N]``; N is the line of the ``logger.warning(`` / ``logger.info(`` call, which moved with every
release (executor/ray_utils.py up to 0.11.0, v1/executor/ray_utils.py from 0.12.0), so one fixed number was right for
0.10.2 and 0.11.0's wait alone.
"""

from __future__ import annotations

#: the start of each message, in the order of :data:`LINES`' entries
MESSAGES = ("The number of required", "Waiting for creating a placement group", "Tensor parallel size (")
#: release -> the lines of the "The number of required GPUs exceeds ..." warning, of the "Waiting for creating a
#: placement group ..." info and (0.12.0 on, else 0) of the "Tensor parallel size (N) exceeds available GPUs" warning,
#: read from each wheel (ray_utils.py@0.6.5 l.284/183, @0.11.0 l.352/240, @0.12.0 l.402/246/331, @0.34.0 l.364/223/293)
LINES: dict[tuple[int, int, int], tuple[int, int, int]] = {
    (0, 6, 5): (284, 183, 0), (0, 7, 0): (315, 212, 0), (0, 7, 2): (320, 214, 0), (0, 7, 3): (327, 221, 0),
    (0, 8, 0): (339, 233, 0), (0, 8, 3): (342, 233, 0), (0, 9, 0): (340, 231, 0), (0, 9, 2): (341, 232, 0),
    (0, 10, 0): (343, 234, 0), (0, 10, 1): (346, 234, 0), (0, 10, 2): (352, 240, 0), (0, 11, 0): (352, 240, 0),
    (0, 12, 0): (402, 246, 331), (0, 14, 0): (405, 249, 334), (0, 15, 0): (408, 252, 337),
    (0, 17, 0): (423, 267, 352), (0, 18, 0): (447, 291, 376), (0, 20, 0): (627, 464, 556),
    (0, 22, 0): (628, 465, 557), (0, 24, 0): (630, 467, 559), (0, 28, 0): (640, 477, 569),
    (0, 29, 0): (622, 477, 551), (0, 30, 0): (619, 474, 548), (0, 31, 0): (613, 467, 542),
    (0, 33, 0): (364, 223, 293),
}
FALLBACK = "ray_utils.py:240"  # a message none of :data:`MESSAGES` starts (none is logged: a guard)


def source(v: tuple[int, ...], message: str) -> str:
    """``ray_utils.py:N`` for the Ray wait line ``message`` at release ``v`` (the newest release read at or before it;
    the oldest read for one before it)."""
    known = [r for r in LINES if r <= tuple(v)]
    lines = LINES[max(known) if known else min(LINES)]
    at = next((lines[i] for i, start in enumerate(MESSAGES) if message.startswith(start) and lines[i]), None)
    return FALLBACK if at is None else f"ray_utils.py:{at}"
