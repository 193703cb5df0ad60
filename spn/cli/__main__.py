"""``python -m spn.cli``: the ``spn`` command."""

import sys

from spn.cli import command

sys.exit(command())
