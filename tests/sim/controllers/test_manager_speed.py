"""A timer pending when the cluster's clock speeds up fires at its cluster time, not at the old speed's wall time.

The worker sleeps the real seconds its next timer is away at the speed of the moment; a game day (or a test)
fast-forwarding a pure wait raised the speed under it, and the timer fired late by that old sleep.
"""

from __future__ import annotations

import threading
import time

from vllm_remedy.sim.clock import Clock
from vllm_remedy.sim.controllers.manager import Manager


def test_a_pending_timer_follows_a_speed_up() -> None:
    clock = Clock(speed=1.0)
    manager = Manager(clock)
    fired = threading.Event()
    manager.start()
    try:
        manager.after(60.0, fired.set)  # a minute away: a minute of wall time at 1x
        time.sleep(0.2)  # the worker is asleep on it
        clock.set_speed(6000.0)  # now 10 ms away
        assert fired.wait(5.0), "the timer waited out the sleep it had computed at 1x"
    finally:
        manager.stop()
