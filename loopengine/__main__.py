"""``python -m loopengine`` runs the command line."""

from loopengine.cli import run

run()
