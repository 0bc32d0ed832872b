"""The ``objective-score`` subcommands, one module per workflow.

Each module parses its command line, calls the core and renders the result, and exposes
``register(subparsers)``, which adds its subcommands to the parser that
:mod:`pytest_objective_scoring.cli` assembles. What several commands share is in
:mod:`.shared`. The batch grading engine that ``grade-batch`` and ``ab run`` both use
(:mod:`pytest_objective_scoring.jobs`) and bad input
(:class:`pytest_objective_scoring.errors.CommandError`) are not commands: they live below this
package, and no module outside this package imports it.
"""
