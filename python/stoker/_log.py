"""The run's lines, handed to the logging logger "stoker"."""

from __future__ import annotations

import logging
import threading

from . import _stoker

logger = logging.getLogger("stoker")


def _pump(lines: _stoker.LineQueue) -> None:
    more = True
    while more:
        taken, more = lines.take(1000)  # closed at the end: at once
        for level, text in taken:
            logger.log(level, text)


def start_pump(session: _stoker.Session) -> threading.Thread:
    """A thread that hands the run's lines to the logger "stoker", each at
    its level, until the run is down (or its session gone)."""
    pump = threading.Thread(target=_pump, args=(session.lines(),),
                            name="stoker-log", daemon=True)
    pump.start()
    return pump
