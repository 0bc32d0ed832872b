"""``python -m pytest_objective_scoring``: the ``objective-score`` command line (:func:`.cli.main`)."""

import sys

from .cli import main

sys.exit(main())
