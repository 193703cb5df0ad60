"""``python -m spn.cli``: the ``spn`` command."""

import sys

from spn.cli import main

sys.exit(main())
