#!/usr/bin/env python3
"""What test identity (issue 27) adds to a test process, against what pytest itself spends on the
same files, measured in one run (benchmarks/README.md).

For each test file (by default the largest test modules of this interpreter's own ``test``
package, real files of thousands of lines; or the files given) it times, alternating, ``--rounds``
times:

(a) ``fingerprint``  what the boot module does before ``site`` (read the file, compile it plainly,
                     collect its code objects: ``boot.fingerprints``) plus what the recorder adds
                     when it loads (the same bytes through pytest's assertion rewriter, compiled:
                     ``recorder._rewritten``);
(b) ``baseline``     what pytest spends to import the module for collection: its assertion
                     rewriting and compilation of the file (``_pytest.assertion.rewrite._rewrite_test``),
                     the step test identity repeats.

and prints the medians and the ratio a/b. The per-item check (``identity_problems``: one code
comparison per collected test and per call) is timed against the same files' functions. Exit 0;
with ``--check``, 1 when the ratio is over ``--max-ratio`` (default 3: the fingerprint compiles
the file twice, plainly and rewritten, where pytest compiles it once).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import sysconfig
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "pytest_objective_scoring"


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def default_files(count: int) -> list[Path]:
    folder = Path(sysconfig.get_paths()["stdlib"]) / "test"
    files = sorted(folder.glob("test_*.py"), key=lambda p: p.stat().st_size, reverse=True)
    return files[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--count", type=int, default=5, help="how many of the largest stdlib test files (default 5)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--max-ratio", type=float, default=3.0)
    args = parser.parse_args(argv)
    files = args.files or default_files(args.count)
    from _pytest.assertion.rewrite import _rewrite_test

    boot = load("_objective_scoring_boot", PACKAGE / "boot.py")
    recorder = load("_objective_scoring_recorder_bench", PACKAGE / "recorder.py")

    class Config:  # what _rewrite_test asks of pytest's config
        def getini(self, name):
            return False

    config = Config()
    lines = sum(len(f.read_bytes().splitlines()) for f in files)
    timings: dict[str, list[float]] = {"fingerprint": [], "baseline": []}
    prints = {}
    for _ in range(args.rounds):
        started = time.perf_counter()
        prints = boot.fingerprints(str(files[0].parent), [f.name for f in files])
        recorder._rewritten(prints, None)
        timings["fingerprint"].append(time.perf_counter() - started)
        started = time.perf_counter()
        for path in files:
            _rewrite_test(path, config)
        timings["baseline"].append(time.perf_counter() - started)
    fingerprint, baseline = (statistics.median(timings[k]) for k in ("fingerprint", "baseline"))
    # the per-item comparison: every code object of the files against its fingerprint
    codes = [(mine["names"], name, code) for mine in prints.values() for name, found in mine["names"].items()
             for code in found]  # fmt: skip
    started = time.perf_counter()
    for names, name, code in codes:
        any(code == pristine for pristine in names.get(name, ()))
    per_item = (time.perf_counter() - started) / max(len(codes), 1)
    ratio = fingerprint / baseline if baseline else float("inf")
    print(f"files: {len(files)} ({lines:,} lines), rounds: {args.rounds}, Python {sys.version.split()[0]}")
    print(f"fingerprint (boot + recorder)   median {fingerprint * 1000:8.1f} ms")
    print(f"baseline (pytest's rewrite)     median {baseline * 1000:8.1f} ms")
    print(f"ratio fingerprint / baseline    {ratio:.2f}  (goal: at most {args.max_ratio:g})")
    print(f"per-item check                  {per_item * 1e6:8.2f} us a code object ({len(codes):,} compared)")
    verdict = "PASS" if ratio <= args.max_ratio else "FAIL"
    print(f"verdict: {verdict}")
    return 1 if args.check and verdict == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
