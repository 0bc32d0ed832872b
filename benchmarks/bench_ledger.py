"""How fast is the ledger? (benchmarks/README.md)

Two measurements, each next to a baseline run in the same process on the same disk:

(1) append: ``--scores`` graded runs (default 10,000), each written the way
    ``grade``, ``grade-batch`` and the plugin write it: one transaction holding the
    score entry (the Score and ``--tests`` per-test outcomes) and its cost entry,
    hash-chained. Baseline: the same bodies inserted into a plain SQLite table with
    the same journal settings and one transaction per run, without canonical JSON,
    hashing or chaining.
(2) verify: ``ledger verify`` over a ledger of ``--rows`` rows (default 100,000).
    Baseline: reading every row of the same file (``SELECT`` of all columns).

Targets (issue 3): appending 10,000 Scores with their outcomes under 5 s; verify
over 100,000 rows under 5 s. Exit status 1 with ``--check`` when a target is missed.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_objective_scoring.ledger import Ledger, canonical, run_entries, verify

APPEND_TARGET_S = 5.0
VERIFY_TARGET_S = 5.0


def envelope(index: int, tests: int) -> dict[str, Any]:
    """A graded run as the runner builds it: the Score, per-test outcomes and the cost."""
    f2p = max(1, tests // 5)
    listed = [{"id": f"tests/test_mod_{index % 50}.py::TestThing::test_case_{n}[param-{n}]",
               "gate": "FAIL_TO_PASS" if n < f2p else "PASS_TO_PASS", "outcome": "passed",
               "status": "passed" if n < f2p else "preserved", "duration": 0.0123} for n in range(tests)]  # fmt: skip
    return {
        "instance_id": f"owner__repo-{index}",
        "harness": f"harness-{index % 7}",
        "status": "verdict",
        "no_verdict_reason": None,
        "compat": "strict",
        "patch_ref": f"sha256:{index:064x}",
        "score": {
            "instance_id": f"owner__repo-{index}", "patch_ref": f"sha256:{index:064x}", "resolved": "resolved",
            "fail_to_pass": {"total": f2p, "passed": f2p, "verdict": "satisfied"},
            "pass_to_pass": {"total": tests - f2p, "passed": tests - f2p, "verdict": "satisfied"},
            "graded_by": "pytest-objective-scoring/0.1.0 (runner) pytest/9.0.3 CPython/3.11.7 linux-x86_64 timeout=1800s",
            "graded_at": 1796000000 + index,
        },  # fmt: skip
        "tests": listed,
        "runner": {"failure_class": "none"},
        "integrity": {"flags": []},
        "cost": {"tokens": 12000, "calls": 8, "cpu": 1.25, "wall_time": 1.5, "dollars": 0.300012},
        "cost_breakdown": {"model_dollars": 0.3, "compute_dollars": 0.0000125, "compute_rate_per_cpu_second": 0.00001,
                           "harness_reported": True},  # fmt: skip
    }


def bench_append(directory: Path, scores: int, tests: int) -> tuple[float, float]:
    envelopes = [envelope(i, tests) for i in range(scores)]
    path = directory / "append.sqlite"
    started = time.perf_counter()
    with Ledger(path) as ledger:
        for item in envelopes:
            ledger.append_linked(run_entries(item, "bench"))
    ledger_s = time.perf_counter() - started
    if not verify(path).ok or len(Ledger(path)) != 2 * scores:
        raise SystemExit("the ledger written by the benchmark does not verify")

    plain = sqlite3.connect(str(directory / "plain.sqlite"), isolation_level=None)
    plain.execute("PRAGMA journal_mode=WAL")
    plain.execute("PRAGMA synchronous=FULL")
    plain.execute("CREATE TABLE rows (seq INTEGER PRIMARY KEY, kind TEXT, body TEXT)")
    started = time.perf_counter()
    for item in envelopes:
        plain.execute("BEGIN IMMEDIATE")
        plain.execute("INSERT INTO rows (kind, body) VALUES ('score', ?)", (repr(item["tests"]),))
        plain.execute("INSERT INTO rows (kind, body) VALUES ('cost', ?)", (repr(item["cost"]),))
        plain.execute("COMMIT")
    baseline_s = time.perf_counter() - started
    plain.close()
    return ledger_s, baseline_s


def bench_verify(directory: Path, rows: int) -> tuple[float, float]:
    path = directory / "verify.sqlite"
    bodies = [envelope(i, 5) for i in range(rows // 2)]
    with Ledger(path) as ledger:
        for start in range(0, len(bodies), 5000):
            chunk = bodies[start : start + 5000]
            items = [entry for item in chunk for entry in run_entries(item, "bench")]
            ledger.append_linked(items)
    started = time.perf_counter()
    result = verify(path)
    verify_s = time.perf_counter() - started
    if not result.ok or result.rows != 2 * len(bodies):
        raise SystemExit(f"verify found problems in a clean ledger: {result.problems[:3]}")
    started = time.perf_counter()
    conn = sqlite3.connect(str(path))
    count = sum(1 for _ in conn.execute("SELECT seq, kind, created, body, prev_hash, hash FROM entries ORDER BY seq"))
    conn.close()
    scan_s = time.perf_counter() - started
    assert count == result.rows
    return verify_s, scan_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scores", type=int, default=10_000, help="Graded runs to append (default: 10000)")
    parser.add_argument("--tests", type=int, default=20, help="Per-test outcomes in each Score (default: 20)")
    parser.add_argument("--rows", type=int, default=100_000, help="Rows in the ledger to verify (default: 100000)")
    parser.add_argument("--dir", metavar="DIR", help="Where to write the ledgers (default: a temporary directory)")
    parser.add_argument("--check", action="store_true", help="Exit 1 when a target is missed")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        directory = Path(tmp)
        append_s, plain_s = bench_append(directory, args.scores, args.tests)
        verify_s, scan_s = bench_verify(directory, args.rows)
    size = len(canonical(envelope(0, args.tests)["tests"]))
    print(f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}; {args.tests} outcomes per Score ({size} bytes)")
    print(f"{'measurement':44} {'seconds':>8} {'baseline':>9} {'ratio':>6}  target")
    lines = [
        (f"append {args.scores} Scores + costs (1 txn each)", append_s, plain_s, APPEND_TARGET_S),
        (f"verify {args.rows} rows", verify_s, scan_s, VERIFY_TARGET_S),
    ]
    failed = False
    for name, seconds, baseline, target in lines:
        verdict = "PASS" if seconds < target else "FAIL"
        failed |= verdict == "FAIL"
        print(f"{name:44} {seconds:8.3f} {baseline:9.3f} {seconds / baseline:6.2f}  < {target:.0f} s {verdict}")
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
