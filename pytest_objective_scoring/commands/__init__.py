"""The ``objective-score`` subcommands, one module per workflow.

Each module parses its command line, calls the core and renders the result, and exposes
``register(subparsers)``, which adds its subcommands to the parser :mod:`..cli` assembles.
What several commands share is in :mod:`.shared`; the batch grading engine ``grade-batch``
and ``ab run`` both use is :mod:`..jobs`, and bad input is :class:`..errors.CommandError`:
neither is a command, and no module outside this package imports it.
"""
