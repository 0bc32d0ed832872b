"""The ``objective-score`` subcommands, one module per workflow.

Each module parses its command line, calls the core and renders the result, and exposes
``register(subparsers)``, which adds its subcommands to the parser that
:mod:`pytest_objective_scoring.cli` assembles. What several commands share is in
:mod:`.shared`. The batch grading engine that ``grade-batch`` and ``ab run`` both use
(:mod:`pytest_objective_scoring.jobs`) and bad input
(:class:`pytest_objective_scoring.errors.CommandError`) are not commands: they live below this
package, and no module outside this package imports it.
"""

from typing import Final

# every command, in the order ``objective-score --help`` lists them: the module of this package that
# registers it, and its one-line help (the module's ``register`` reads it from :data:`HELP`). The
# command line imports only the module of the command run; the others stand as their name and help,
# which is all ``--help`` and a mistyped command need (``tests/test_layout.py`` checks the table
# against what each module registers).
COMMANDS: Final = (
    ("grade", "grade", "Grade one candidate patch in an isolated copy of a repository"),
    ("demo", "demo", "Grade the bundled example candidates and print their Scores"),
    ("examples", "examples", "Copy the examples the README's walk-through uses (projects, patches, datasets, reports) into DIR"),
    ("ledger", "ledger", "Verify, export or list the append-only ledger"),
    ("batch", "grade-batch", "Grade a predictions file against a dataset, in parallel or on a cluster"),
    ("sets", "sets", "Benchmark sets: development, regression and holdout_live; burning, rotation, timestamp gating"),
    ("ab", "ab", "Preregister, run and report a controlled A/B comparison over seeds"),
    ("audit", "audit", "Audit tasks (canaries, gold validation, weak tests, flakiness, exploits, leakage)"),
    ("audit", "receipt", "Print the public receipt of a graded run (identity, digests, disposition)"),
    ("samples", "grade-samples", "Run function-level benchmark samples (HumanEval, MBPP, EvoEval, BigCodeBench, "
                                 "LiveCodeBench) in subprocesses and report pass@k and pass^k"),
    ("harbor", "harbor", "Verify Harbor / Terminal-Bench task directories by executing their tests"),
    ("judged", "import-judged", "Record scores a model judge produced, labelled judge-based (never evidence)"),
    ("scorecard", "scorecard", "Show a run's hierarchical scorecard, or diff two sets of runs stage by stage"),
    ("costs", "costs", "Resolve rate against cost per harness, ranked, with the Pareto front"),
)  # fmt: skip
HELP: Final = {name: text for _, name, text in COMMANDS}
