"""The daemon: schedules cron triggers, follows the event log and the metrics, runs the queue.

``loopengine daemon`` runs it; a ``Firing``'s arrival is also how ``loopengine trigger`` queues a
job (``store.intake``), so a manual job obeys the same overlap policy as a triggered one.
"""

from loopengine.daemon._daemon import run_daemon
from loopengine.daemon._intake import Firing
from loopengine.daemon._log import DaemonLog
from loopengine.daemon._loops import LoopFolder, triggers_of

__all__ = [
    "DaemonLog",
    "Firing",
    "LoopFolder",
    "run_daemon",
    "triggers_of",
]
