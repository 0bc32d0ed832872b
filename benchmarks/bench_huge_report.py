"""Peak memory and time of ``objective-score grade --from-report`` on a huge JUnit XML file.

Generates, in a temporary folder, two JUnit XML reports of the same shape, a small one (``--small-mb``,
5 MB) and a big one (``--mb``, 500 MB), and an instance listing 55 of their passing tests (5
FAIL_TO_PASS, 50 PASS_TO_PASS). Each report is graded by the command line itself,
``python -m pytest_objective_scoring grade --from-report FILE --instance FILE --no-ledger --json``,
in a subprocess whose peak resident memory is read from ``os.wait4`` (its own ``ru_maxrss``, not
the maximum over every child) and whose wall time is measured around it. The script prints, for each
file, the peak, the time, whether the verdict was the expected one and how many progress lines the
command wrote on standard error, then the ratios big/small.

Shapes (``--shape``):

* ``output`` (the default): the same number of testcases (``--cases``, 20,000) in both files; what
  grows with the file is what real huge reports are made of, the captured output of passing tests
  (``<system-out>``) and the tracebacks of failing ones. A reader whose memory does not grow with the
  file keeps the two peaks within a small multiple.
* ``cases``: one short ``<testcase/>`` line after another, so the number of testcases grows with the
  file (about 110 bytes each). Grading keeps a record per executed test (hints and counts need them
  all), so here memory grows with the number of tests, not with the bytes around them.

``--runner surefire`` writes Maven Surefire's shape instead of pytest's (read by ``foreign.py``).
``--old REF`` also grades both files with the package at that commit (``git archive``, read-only),
for before/after figures in the same run. ``--json`` prints the rows as JSON.

    python benchmarks/bench_huge_report.py                      # 5 MB and 500 MB (about 0.5 GB of free temporary disk)
    python benchmarks/bench_huge_report.py --mb 50 --old HEAD   # a quick before/after
    python benchmarks/bench_huge_report.py --shape cases --mb 50 --runner surefire
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "pytest_objective_scoring"
LOG_LINE = "2026-01-02 10:11:12,345 INFO  [worker-3] svc.handler: processed item {i} in 0.42 ms (cache hit)\n"
TRACEBACK = (
    "def test_case():\n        value = compute()\n>       assert value == expected\nE       AssertionError: "
    "assert 41 == 42\n\ntests/test_mod.py:17: AssertionError\n"
)


class BenchError(Exception):
    pass


def ids(runner: str, i: int) -> tuple[str, str, str]:
    """``(classname, name, listed id)`` of testcase ``i``."""
    if runner == "surefire":
        classname = f"com.example.pkg{i // 100:05d}.BigTest"
        name = f"testCase{i:08d}"
        return classname, name, f"{classname}.{name}"
    module = f"tests/test_mod_{i // 100:05d}.py"
    return module[:-3].replace("/", "."), f"test_case_{i:08d}", f"{module}::test_case_{i:08d}"


def kind(i: int) -> str:
    return "failed" if i % 25 == 7 else "skipped" if i % 40 == 3 else "passed"


def padding(size: int, start: int) -> str:
    """About ``size`` characters of captured log lines."""
    out, i = [], start
    total = 0
    while total < size:
        text = LOG_LINE.format(i=i)
        out.append(text)
        total += len(text)
        i += 1
    return "".join(out)[:size]


def write_report(path: Path, runner: str, megabytes: float, shape: str, cases: int) -> int:
    """Write the report; return how many testcases it holds."""
    target = int(megabytes * 1_000_000)
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        header = _header(runner)
        out.write(header)
        written = len(header)
        if shape == "cases":
            i = 0
            while written < target:
                written += _case(out, runner, i, 0)
                i += 1
            cases = i
        else:
            per_case = max(0, (target - written) // max(cases, 1) - 120)
            for i in range(cases):
                written += _case(out, runner, i, per_case)
        out.write("</testsuite>\n</testsuites>\n" if runner == "pytest" else "</testsuite>\n")
    return cases


def _header(runner: str) -> str:
    if runner == "surefire":
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
                'xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/'
                'surefire-test-report-3.0.xsd" version="3.0" name="com.example.BigTest" time="12.5" tests="0" '
                'errors="0" skipped="0" failures="0">\n<properties>\n<property name="java.version" value="17.0.9"/>\n'
                '<property name="os.name" value="Linux"/>\n<property name="os.arch" value="amd64"/>\n</properties>\n')
    return ('<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" '
            'failures="0" skipped="0" tests="0" time="12.5" timestamp="2026-01-02T10:11:12" hostname="bench">\n')


def _case(out: TextIO, runner: str, i: int, pad: int) -> int:
    classname, name, _ = ids(runner, i)
    outcome = kind(i)
    if runner == "surefire":
        head = f'<testcase name="{name}" classname="{classname}" time="0.001"'
    else:
        head = f'<testcase classname="{classname}" name="{name}" time="0.001"'
    if not pad and outcome == "passed":
        text = head + " />\n"
    else:
        body = []
        if outcome == "failed":
            trace = TRACEBACK + padding(pad // 2, i) if pad else TRACEBACK
            body.append(f'<failure message="AssertionError: assert 41 == 42">{trace}</failure>')
        elif outcome == "skipped":
            body.append('<skipped type="pytest.skip" message="not on this platform">tests/x.py:3: not here</skipped>')
        if pad:
            body.append(f"<system-out>{padding(pad if outcome == 'passed' else pad // 2, i)}</system-out>")
        text = head + ">" + "".join(body) + "</testcase>\n"
    out.write(text)
    return len(text)


def write_instance(path: Path, runner: str, cases: int) -> None:
    passing = [i for i in range(cases) if kind(i) == "passed"]
    step = max(1, len(passing) // 55)
    chosen = [ids(runner, i)[2] for i in passing[::step][:55]]
    data = {"instance_id": "bench__huge-report-1", "FAIL_TO_PASS": chosen[:5], "PASS_TO_PASS": chosen[5:]}
    path.write_text(json.dumps(data), encoding="utf-8")


def extract(ref: str, into: Path) -> None:
    """``git archive REF pytest_objective_scoring | tar -x -C into`` (read-only git)."""
    done = subprocess.run(["git", "-C", str(ROOT), "archive", ref, PACKAGE], capture_output=True)
    if done.returncode != 0:
        raise BenchError(f"git archive {ref} failed: {done.stderr.decode(errors='replace').strip()}")
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(into, filter="data")
        else:
            archive.extractall(into)


def grade(report: Path, instance: Path, runner: str, package: Path, scratch: Path) -> dict[str, Any]:
    """Grade through the command line in a subprocess: its peak RSS (wait4) and wall time."""
    command = [sys.executable, "-m", PACKAGE, "grade", "--from-report", str(report), "--instance", str(instance),
               "--no-ledger", "--json"]
    if runner != "pytest":
        command += ["--runner", runner]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(package), os.environ.get("PYTHONPATH")]))}
    out_path, err_path = scratch / "stdout.txt", scratch / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=scratch, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
    stdout = out_path.read_text(encoding="utf-8", errors="replace")
    stderr = err_path.read_text(encoding="utf-8", errors="replace")
    try:
        envelope = json.loads(stdout)
    except ValueError:
        raise BenchError(f"{report.name}: exit {child.returncode}, no JSON on stdout: {stderr[-2000:]}") from None
    resolved = (envelope.get("score") or {}).get("resolved")
    if child.returncode != 0 or resolved != "resolved":
        raise BenchError(f"{report.name}: exit {child.returncode}, resolved={resolved!r}: {stderr[-2000:]}")
    progress = [line for line in stderr.splitlines() if line.startswith("objective-score grade: ")]
    return {"peak_rss_mb": usage.ru_maxrss / 1024, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "exit": child.returncode, "progress_lines": len(progress), "progress": progress[:1] + progress[-1:],
            "tests": envelope["summary"]["executed"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=500, help="the big report's size in MB (default: 500)")
    parser.add_argument("--small-mb", type=float, default=5, help="the small report's size in MB (default: 5)")
    parser.add_argument("--shape", choices=("output", "cases"), default="output",
                        help="what grows with the file: captured output (default) or the number of testcases")
    parser.add_argument("--cases", type=int, default=20_000, help="testcases in each file with --shape output")
    parser.add_argument("--runner", choices=("pytest", "surefire"), default="pytest", help="whose JUnit XML to write")
    parser.add_argument("--old", metavar="REF", help="also grade with the package at this commit (git archive)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-huge-report-") as tmp:
            scratch = Path(tmp)
            packages = {"tree": ROOT}
            if args.old:
                extract(args.old, scratch / "old")
                packages = {f"old ({args.old})": scratch / "old", "tree": ROOT}
            for label, megabytes in (("small", args.small_mb), ("big", args.mb)):
                report = scratch / f"{label}.xml"
                start = time.perf_counter()
                cases = write_report(report, args.runner, megabytes, args.shape, args.cases)
                made = time.perf_counter() - start
                instance = scratch / f"{label}-instance.json"
                write_instance(instance, args.runner, cases)
                for version, package in packages.items():
                    row = grade(report, instance, args.runner, package, scratch)
                    rows.append({"file": label, "version": version, "mb": report.stat().st_size / 1e6,
                                 "testcases": cases, "generated_s": made, **row})
                    if not args.json:
                        print(f"{label:>5} {report.stat().st_size / 1e6:8.1f} MB {cases:>9} testcases  {version:<14} "
                              f"peak {row['peak_rss_mb']:8.1f} MB  wall {row['wall_s']:7.2f} s  "
                              f"cpu {row['cpu_s']:7.2f} s  progress lines {row['progress_lines']}", flush=True)
                report.unlink()
    except BenchError as exc:
        print(f"bench_huge_report: {exc}", file=sys.stderr)
        return 2
    ratios = {}
    for version in {r["version"] for r in rows}:
        small = next(r for r in rows if r["version"] == version and r["file"] == "small")
        big = next(r for r in rows if r["version"] == version and r["file"] == "big")
        ratios[version] = {"peak": big["peak_rss_mb"] / small["peak_rss_mb"], "wall": big["wall_s"] / small["wall_s"]}
    if args.json:
        print(json.dumps({"date": time.strftime("%Y-%m-%d"), "nproc": os.cpu_count(), "python": platform.python_version(),
                          "shape": args.shape, "runner": args.runner, "rows": rows, "ratios": ratios}, indent=2))
    else:
        for version, ratio in sorted(ratios.items()):
            print(f"{version}: peak big/small {ratio['peak']:.2f}x, wall big/small {ratio['wall']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
