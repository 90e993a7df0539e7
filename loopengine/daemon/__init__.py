"""The daemon: schedules cron triggers, follows the event log and the metrics, runs the queue.

``loopengine daemon`` runs it; its triggers fire as ``app.Firing``s, as ``loopengine trigger``
does, so a manual job obeys the same overlap policy as a triggered one.
"""

from loopengine.daemon._daemon import run_daemon
from loopengine.daemon._log import DaemonLog
from loopengine.daemon._loops import LoopFolder, triggers_of

__all__ = [
    "DaemonLog",
    "LoopFolder",
    "run_daemon",
    "triggers_of",
]
