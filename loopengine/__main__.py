"""``python -m loopengine`` runs the command line."""

import sys

from loopengine.cli import main

sys.exit(main())
