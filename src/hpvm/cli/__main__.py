"""``python -m hpvm.cli``: the ``hpvm`` command."""

import sys

from . import main

sys.exit(main())
