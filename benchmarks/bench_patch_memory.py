"""Peak memory of `objective-score grade` on candidates of 1, 10 and 100 MB (issue 14, point 4).

Each candidate adds one large Python module to the `intervals` fixture (``--shape hunks``: one hunk
per line, the worst case for a reader keeping an object per hunk). For each size this prints
the grader process's own peak (VmHWM, read in the process after grading), how far above the
baseline that is as a multiple of the patch's size, and the peak of each kind of child process,
against a baseline grading of the fixture's gold patch measured in the same run:

* ``AST child``: the grader's bounded checker (``symbols._apart_main``: ``ast.parse`` and
  ``compile`` of a large candidate file, limited to ``CHECK_MEMORY`` of address space);
* ``git``: git and GNU patch applying the candidate and reading the copy;
* ``test run``: the sandbox launcher and the candidate's pytest process (the candidate's code,
  not the grader's).

Children are sampled every 10 ms from /proc (their own VmHWM; a process shorter than that may be
missed): getrusage(RUSAGE_CHILDREN) cannot tell them apart, and it counts the grader's own peak for
every child started with vfork. A candidate over --max-patch-size (16 MiB by default) is refused
unread, so the 100 MB case must cost no more than reading the limit.

    python benchmarks/bench_patch_memory.py [--sizes 1 10 100] [--shape module|hunks] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, os, sys, threading, time
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from pytest_objective_scoring.instances import load_instance
from pytest_objective_scoring.runner import GradeRequest, grade_candidate
from pytest_objective_scoring.commands.grade import _read_patch

ME, OWN = os.getpid(), open("/proc/self/cmdline", "rb").read()
peaks, kinds, done = {}, {}, threading.Event()

def kind(pid, command, parent_kind):
    text = command.decode("utf-8", "replace")
    if "_apart_main" in text or "ast.parse" in text:  # (ast.parse: the inline checker of earlier versions)
        return "ast"
    if "sandbox.py" in text or "_objective_scoring_boot" in text or parent_kind == "tests":
        return "tests"
    return "git" if os.path.basename(text.split("\0", 1)[0]) in ("git", "patch") else "other"

def sample():
    while not done.is_set():
        parents = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as handle:
                        stat = handle.read()
                    parents[int(name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
                except (OSError, ValueError):
                    pass
        for pid in sorted(parents):  # parents (smaller pids) mostly first, so their kind is known
            chain, up = [], parents.get(pid)
            while up is not None and up != ME and up > 1:
                chain.append(up)
                up = parents.get(up)
            if up != ME:
                continue
            try:
                command = open(f"/proc/{pid}/cmdline", "rb").read()
                hwm = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM"))
            except (OSError, StopIteration):
                continue
            if command == OWN:
                continue  # started with vfork and not yet exec'd: the grader's own memory
            kinds.setdefault(pid, kind(pid, command, kinds.get(chain[0]) if chain else None))
            peaks[pid] = max(peaks.get(pid, 0), hwm)
        time.sleep(0.01)

sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
patch = _read_patch(sys.argv[1], 16 << 20)
result = grade_candidate(GradeRequest(repo=Path(sys.argv[2]) / "fixtures/repos/intervals",
                         instance=load_instance(Path(sys.argv[2]) / "fixtures/instances/intervals.json"), patch=patch))
time.sleep(0.05)
done.set()
sampler.join()
own = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
children = {k: max([peaks[p] for p in peaks if kinds[p] == k], default=0) for k in ("ast", "git", "tests", "other")}
print(json.dumps({"own_kb": own, "children_kb": children, "failure_class": result.failure_class}))
"""


def line(i: int) -> str:
    return f"+x_{i} = {i}  # {'a' * 20}\n"


def hunk(i: int) -> str:
    return f"@@ -0,0 +{i + 1} @@\n{line(i)}"


def candidate(path: Path, megabytes: float, shape: str = "module") -> None:
    """A diff of ``megabytes`` MiB adding one module: ``x_0 = 0  # aaa...``, one line per name, in
    one hunk (``module``) or one hunk per line (``hunks``)."""
    piece = line if shape == "module" else hunk
    lines, size = 0, 150  # the headers
    while size < megabytes * 2**20:
        size += len(piece(lines))
        lines += 1
    with open(path, "w") as handle:
        handle.write("diff --git a/src/intervals/big.py b/src/intervals/big.py\nnew file mode 100644\n"
                     "--- /dev/null\n+++ b/src/intervals/big.py\n")
        if shape == "module":
            handle.write(f"@@ -0,0 +1,{lines} @@\n")
        for i in range(lines):
            handle.write(piece(i))


def measure(patch: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(patch), str(ROOT), str(ROOT)], capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def mb(kb: int) -> str:
    return f"{kb / 1024:.0f}" if kb else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=float, default=[1, 10, 100], help="candidate sizes in MB")
    parser.add_argument("--shape", choices=("module", "hunks"), default="module", help="one hunk, or one per line")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = measure(ROOT / "fixtures/patches/intervals/gold.diff")
        for size in args.sizes:
            patch = Path(tmp) / f"p{size}.diff"
            candidate(patch, size, args.shape)
            rows.append({"mb": size, "bytes": patch.stat().st_size, **measure(patch)})
            patch.unlink()
    if args.json:
        print(json.dumps({"baseline": base, "rows": rows}, indent=2))
        return 0
    own, kids = base["own_kb"], base["children_kb"]
    print(f"baseline (gold.diff): grader {mb(own)} MB; children: AST child {mb(kids['ast'])}, "
          f"git {mb(kids['git'])}, test run {mb(kids['tests'])} MB")
    print(f"{'patch MB':>9} {'grader MB':>10} {'above base MB':>14} {'x patch':>8} {'AST child MB':>13} {'git MB':>7} "
          f"{'test run MB':>12} {'failure class':>16}")
    for row in rows:
        above, kids = (row["own_kb"] - own) / 1024, row["children_kb"]
        print(f"{row['bytes'] / 2**20:>9.1f} {mb(row['own_kb']):>10} {above:>14.1f} {above / (row['bytes'] / 2**20):>8.1f} "
              f"{mb(kids['ast']):>13} {mb(kids['git']):>7} {mb(kids['tests']):>12} {row['failure_class']:>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
