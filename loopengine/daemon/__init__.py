"""The daemon: schedules cron triggers, follows the event log and the metrics, runs the queue.

``loopengine daemon`` runs it beside its HTTP API (``loopengine.api``); its triggers fire as
``app.Firing``s, as ``loopengine trigger`` does, so a manual job obeys the same overlap policy as
a triggered one.
"""

from loopengine.daemon._daemon import Daemon, Signals, supervised, wait_out_outages
from loopengine.daemon._hooks import HookRoute
from loopengine.daemon._log import DaemonLog, log_intake
from loopengine.daemon._loops import LoopFolder, triggers_of

__all__ = [
    "Daemon",
    "DaemonLog",
    "HookRoute",
    "LoopFolder",
    "Signals",
    "log_intake",
    "supervised",
    "triggers_of",
    "wait_out_outages",
]
