"""What does the plugin cost when it is installed but not enabled, and enabled under xdist? (benchmarks/README.md)

Targets (issue 16, point 2), each against a baseline measured in the same run:

* idle: installed but not enabled, the plugin adds under 3 ms to a pytest run
  (``python -X importtime -m pytest --co -q`` on a small project, against the same
  command with ``-p no:objective_scoring``);
* xdist: enabled under ``-n 2`` on 20,000 trivial tests, at most 1.05x bare ``-n 2``
  (the median over rounds of the ratio of the two runs of the same round).

Both run the code of one or two package folders, imported through ``PYTHONPATH``:

``new``   the working tree's package, copied when the benchmark starts (so every round runs
          the same code while the tree is being edited);
``old``   with ``--old REF``, the package at that commit (``git archive``): before/after in the
          same run. When the installed ``pytest11`` entry point names a module that commit does
          not have, a one-line module re-exporting the hooks of that commit's own entry module
          stands in for it.

Both folders are byte-compiled before any timing (the environment may set
PYTHONDONTWRITEBYTECODE). Every command gets ``-p no:cacheprovider`` and ``-p no:NAME`` for
every other third-party pytest plugin installed (pytest-xdist stays loaded for the xdist part),
so unrelated plugins do not dominate.

Idle: a project of 20 tests. Each round runs, in rotating order, ``bare`` (``-p
no:objective_scoring``) and ``installed@VERSION`` through a probe that starts pytest exactly
as ``python -m pytest`` does, under ``-X importtime``, and reports from inside the process
the time spent loading the plugin's entry point and in its hooks (wall and CPU), and which
modules of the package were imported. Reported: the medians of the whole process (wall and
CPU), the medians of the paired differences against bare in ms and of the ratio, the
in-process figures (the verdict: their CPU median, which other load on the machine moves
least), and the package's modules ``-X importtime`` lists (the modules the entry module
imports; not the entry module itself, which pytest imports through importlib).

xdist: the suite of ``bench_plugin_overhead.py`` (N tests, every one listed, 50 of them as
FAIL_TO_PASS). Each round runs ``bare`` (``-n 2 -p no:objective_scoring``) and
``objective@VERSION`` (``-n 2 --objective-score=... --objective-score-out=...``, the ledger
written to its default place), rotating the order; every objective run must write an envelope
saying resolved with every listed test passed. Reported: median wall and CPU (the whole process
tree, from ``getrusage``), the median over rounds of each round's ratio to bare (the verdict),
its range, the ratio of the fastest runs, and the CPU ratio; then one more run of each version
with a probe that adds up the controller's time inside the plugin's hooks (per report, and at
the end of the session).

Exit status 0, unless ``--check`` is given and a verdict is FAIL (then 1); a run that does not
do what it should is an error (2).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import io
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_plugin_overhead import BenchError, check_outputs, code_version, generate_suite  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pytest_objective_scoring"
OUR_PLUGIN = "objective_scoring"
KEEP_FOR_XDIST = {"xdist"}
IDLE_MAX_MS = 3.0
XDIST_MAX_RATIO = 1.05

PROBE = r'''
import functools, importlib.metadata, json, os, sys, time

spent = {"load": 0.0, "hooks": 0.0, "load_cpu": 0.0, "hooks_cpu": 0.0}
_load = importlib.metadata.EntryPoint.load


def timed(function):
    @functools.wraps(function)  # keeps pluggy's hookimpl marks and (through __wrapped__) the arguments
    def wrapper(*args, **kwargs):
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent["hooks"] += time.perf_counter() - started
            spent["hooks_cpu"] += time.process_time() - cpu
    return wrapper


def load(self):
    if self.group != "pytest11" or self.name != "objective_scoring":
        return _load(self)
    started, cpu = time.perf_counter(), time.process_time()
    module = _load(self)
    spent["load"] += time.perf_counter() - started
    spent["load_cpu"] += time.process_time() - cpu
    spent["file"] = getattr(module, "__file__", None)
    for name in [n for n in vars(module) if n.startswith("pytest_")]:
        setattr(module, name, timed(getattr(module, name)))
    return module


importlib.metadata.EntryPoint.load = load
import pytest  # noqa: E402

try:
    code = pytest.console_main()
finally:
    spent["modules"] = sorted(m for m in sys.modules if m == "pytest_objective_scoring" or m.startswith("pytest_objective_scoring."))
    with open(os.environ["BENCH_PROBE_OUT"], "w", encoding="utf-8") as out:
        json.dump(spent, out)
raise SystemExit(code)
'''


# Loaded with -p in one extra run per version: the controller's time inside the hooks of the
# plugin object registered as objective-scoring-session (whatever its class in that version).
CONTROLLER_PROBE = r'''
import json, os, time

spent = {}


def pytest_sessionstart(session):
    manager = session.config.pluginmanager
    plugin = manager.get_plugin("objective-scoring-session")
    if plugin is None or hasattr(session.config, "workerinput"):
        return
    for caller in manager.get_hookcallers(plugin) or []:
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin and not (impl.wrapper or impl.hookwrapper):
                impl.function = timed(impl.function, caller.name)


def timed(function, name):
    # perf_counter, not process_time: it costs tens of nanoseconds (no system call), and a hook
    # call lasts a few microseconds, too short to be preempted often
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - started
    return wrapper


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open(os.environ["BENCH_CONTROLLER_OUT"], "w", encoding="utf-8") as out:
            json.dump(spent, out)
'''


# ---------------------------------------------------------------- the package folders


def installed_entry_module() -> str:
    for ep in importlib.metadata.entry_points(group="pytest11"):
        if ep.name == OUR_PLUGIN:
            return ep.value
    raise BenchError(f"the {OUR_PLUGIN} pytest11 entry point is not installed (pip install -e .)")


def own_entry_module(folder: Path) -> str:
    """The entry module that version's pyproject.toml names (the package's plugin module before it had one)."""
    try:
        text = (folder / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return f"{PACKAGE}.plugin"
    for line in text.splitlines():
        if line.strip().startswith(f"{OUR_PLUGIN} ="):
            return line.split("=", 1)[1].strip().strip('"')
    return f"{PACKAGE}.plugin"


def extract(ref: str, into: Path) -> None:
    """``git archive REF pytest_objective_scoring pyproject.toml | tar -x -C into`` (read-only git)."""
    done = subprocess.run(["git", "-C", str(ROOT), "archive", ref, PACKAGE, "pyproject.toml"], capture_output=True)
    if done.returncode != 0:
        raise BenchError(f"git archive {ref} failed: {done.stderr.decode(errors='replace').strip()}")
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(into, filter="data")
        else:
            archive.extractall(into)


def snapshot(into: Path) -> str:
    """Copy the working tree's package and pyproject.toml; return a short digest of the package."""
    shutil.copytree(ROOT / PACKAGE, into / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")
    digest = hashlib.sha256()
    for path in sorted((into / PACKAGE).rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(into).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def make_loadable(folder: Path, entry: str) -> None:
    """Let the installed entry point load this version: a stand-in module when it names one the version lacks."""
    own = own_entry_module(folder)
    target = folder / (entry.replace(".", "/") + ".py")
    if own == entry:
        return
    if target.exists():
        raise BenchError(f"{folder}: the installed entry point names {entry}, which this version has but does not "
                         f"use as its entry point ({own}): reinstall the package (pip install -e .)")  # fmt: skip
    target.write_text(f"from {own} import *  # noqa: F401,F403 (benchmark stand-in)\n", encoding="utf-8")


def byte_compile(folder: Path, python: str) -> None:
    done = subprocess.run([python, "-m", "compileall", "-q", str(folder / PACKAGE)], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"compileall {folder} failed:\n{(done.stdout + done.stderr)[-2000:]}")


# ---------------------------------------------------------------- commands


def blocked_plugins(keep: set[str]) -> list[str]:
    names = {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}
    return sorted(names - keep - {OUR_PLUGIN})


def run(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[float, float]:
    """One subprocess; (wall seconds, CPU seconds of its whole tree). Exit status 0 or 5 (nothing collected) only."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(log, "wb") as out:
        code = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise BenchError(f"{' '.join(command)}\nexited {code}:\n{log.read_text(encoding='utf-8', errors='replace')[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def env_for(folder: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_OBJECTIVE_SCORE", None)
    if folder is not None:
        env["PYTHONPATH"] = str(folder)
    return env


def rotations(variants: list[str], rounds: int) -> list[list[str]]:
    orders = []
    for r in range(rounds):
        order = variants[r % len(variants):] + variants[: r % len(variants)]
        orders.append(order[::-1] if (r // len(variants)) % 2 else order)
    return orders


# ---------------------------------------------------------------- idle


def idle_project(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for f in range(2):
        body = "".join(f"def test_{i}():\n    assert {i} == {i}\n\n" for i in range(10))
        (root / f"test_idle_{f}.py").write_text(body, encoding="utf-8")


def parse_importtime(text: str) -> dict[str, int]:
    """Module -> self microseconds, for the package's modules -X importtime lists."""
    found = {}
    for line in text.splitlines():
        if line.startswith("import time:") and PACKAGE in line:
            parts = line.split("|")
            found[parts[2].strip()] = int(parts[0].split(":")[1])
    return found


def measure_idle(python: str, folders: dict[str, Path], scratch: Path, rounds: int, verbose: bool) -> dict[str, Any]:
    project = scratch / "idle"
    idle_project(project)
    (scratch / "probe.py").write_text(PROBE, encoding="utf-8")
    base = [python, "-X", "importtime", str(scratch / "probe.py"), "--co", "-q", "-p", "no:cacheprovider"]
    for name in blocked_plugins(set()):
        base += ["-p", f"no:{name}"]
    variants = ["bare"] + [f"installed@{label}" for label in folders]
    newest = list(folders)[-1]
    walls: dict[str, list[float]] = {v: [] for v in variants}
    cpus: dict[str, list[float]] = {v: [] for v in variants}
    inside: dict[str, list[float]] = {v: [] for v in variants}
    inside_cpu: dict[str, list[float]] = {v: [] for v in variants}
    details: dict[str, Any] = {}
    for index, order in enumerate([variants] + rotations(variants, rounds)):
        warm = index == 0  # the first pass is an untimed warm-up
        for variant in order:
            label = variant.split("@", 1)[1] if "@" in variant else newest
            env = env_for(folders[label])
            env["BENCH_PROBE_OUT"] = str(scratch / "probe.json")
            command = base + (["-p", f"no:{OUR_PLUGIN}"] if variant == "bare" else [])
            log = scratch / "idle.log"
            wall, cpu = run(command, project, env, log)
            probe = json.loads((scratch / "probe.json").read_text(encoding="utf-8"))
            if variant != "bare":
                if not str(probe.get("file", "")).startswith(str(folders[label])):
                    raise BenchError(f"{variant} loaded its plugin from {probe.get('file')}, not from {folders[label]}")
                details[variant] = {"modules": probe["modules"],
                                    "importtime_us": parse_importtime(log.read_text(encoding="utf-8", errors="replace"))}  # fmt: skip
            elif probe["modules"] and probe["modules"] != [PACKAGE]:
                raise BenchError(f"bare imported the package's modules: {probe['modules']}")
            if warm:
                continue
            walls[variant].append(wall)
            cpus[variant].append(cpu)
            inside[variant].append((probe["load"] + probe["hooks"]) * 1000)
            inside_cpu[variant].append((probe["load_cpu"] + probe["hooks_cpu"]) * 1000)
            if verbose:
                print(f"  idle {variant:<16} {wall * 1000:7.1f} ms wall {cpu * 1000:7.1f} ms cpu "
                      f"{inside[variant][-1]:6.2f} ms in plugin", file=sys.stderr)  # fmt: skip
    rows = []
    for variant in variants:
        diffs = [w - b for w, b in zip(walls[variant], walls["bare"])]
        cpu_diffs = [c - b for c, b in zip(cpus[variant], cpus["bare"])]
        rows.append({
            "variant": variant,
            "wall_ms": round(statistics.median(walls[variant]) * 1000, 2),
            "cpu_ms": round(statistics.median(cpus[variant]) * 1000, 2),
            "paired_wall_diff_ms": round(statistics.median(diffs) * 1000, 2),
            "paired_cpu_diff_ms": round(statistics.median(cpu_diffs) * 1000, 2),
            "ratio": round(statistics.median(w / b for w, b in zip(walls[variant], walls["bare"])), 4),
            "in_plugin_ms": round(statistics.median(inside[variant]), 3),
            "in_plugin_min_ms": round(min(inside[variant]), 3),
            "in_plugin_cpu_ms": round(statistics.median(inside_cpu[variant]), 3),
            **details.get(variant, {}),
        })  # fmt: skip
    return {"rounds": rounds, "rows": rows}


# ---------------------------------------------------------------- xdist


def measure_xdist(python: str, folders: dict[str, Path], scratch: Path, args: argparse.Namespace) -> dict[str, Any]:
    n = args.tests
    suite = scratch / "xdist"
    generate_suite(suite, n, 100, 50)
    base = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(args.workers)]
    for name in blocked_plugins(KEEP_FOR_XDIST):
        base += ["-p", f"no:{name}"]
    objective = [f"--objective-score={suite / 'instance.json'}", f"--objective-score-out={suite / 'out.json'}"]
    variants = ["bare"] + [f"objective@{label}" for label in folders]
    newest = list(folders)[-1]
    walls: dict[str, list[float]] = {v: [] for v in variants}
    cpus: dict[str, list[float]] = {v: [] for v in variants}

    def one(variant: str) -> tuple[float, float]:
        label = variant.split("@", 1)[1] if "@" in variant else newest
        command = base + (["-p", f"no:{OUR_PLUGIN}"] if variant == "bare" else objective) + ["tests"]
        shutil.rmtree(suite / ".objective-scoring", ignore_errors=True)  # every run starts a fresh ledger
        timing = run(command, suite, env_for(folders[label]), scratch / "xdist.log")
        if variant != "bare":
            check_outputs("objective", suite, n, 50)
        return timing

    for variant in variants:  # untimed warm-up
        one(variant)
    for r, order in enumerate(rotations(variants, args.rounds)):
        for variant in order:
            wall, cpu = one(variant)
            walls[variant].append(wall)
            cpus[variant].append(cpu)
            if args.verbose:
                print(f"  xdist round {r + 1} {variant:<16} {wall:8.3f} s wall {cpu:8.3f} s cpu", file=sys.stderr)
    inside: dict[str, dict[str, float]] = {}
    (scratch / "bench_controller_probe.py").write_text(CONTROLLER_PROBE, encoding="utf-8")
    for variant in variants[1:]:  # one more run each, with the probe (not timed)
        label = variant.split("@", 1)[1]
        env = env_for(folders[label])
        env["PYTHONPATH"] += os.pathsep + str(scratch)
        env["BENCH_CONTROLLER_OUT"] = str(scratch / "controller.json")
        shutil.rmtree(suite / ".objective-scoring", ignore_errors=True)
        run(base + ["-p", "bench_controller_probe"] + objective + ["tests"], suite, env, scratch / "xdist.log")
        check_outputs("objective", suite, n, 50)
        inside[variant] = {k: round(v, 4) for k, v in json.loads((scratch / "controller.json").read_text()).items()}
    rows = []
    for variant in variants:
        rows.append({
            "variant": variant,
            "wall_s": round(statistics.median(walls[variant]), 3),
            "cpu_s": round(statistics.median(cpus[variant]), 3),
            "paired_ratio": round(statistics.median(w / b for w, b in zip(walls[variant], walls["bare"])), 4),
            "ratio_range": [round(min(w / b for w, b in zip(walls[variant], walls["bare"])), 3),
                            round(max(w / b for w, b in zip(walls[variant], walls["bare"])), 3)],
            "cpu_ratio": round(statistics.median(c / b for c, b in zip(cpus[variant], cpus["bare"])), 4),
            # noise on a shared machine only adds time: the fastest rounds are the best estimate of the code's cost
            "min_ratio": round(min(walls[variant]) / min(walls["bare"]), 4),
            "walls": [round(w, 3) for w in walls[variant]],
            "cpus": [round(c, 3) for c in cpus[variant]],
            "controller_hooks_s": inside.get(variant, {}),
        })  # fmt: skip
    return {"tests": n, "workers": args.workers, "rounds": args.rounds, "rows": rows}


# ---------------------------------------------------------------- output


def verdicts(idle: dict[str, Any] | None, xdist: dict[str, Any] | None) -> list[dict[str, Any]]:
    found = []
    for row in (idle or {}).get("rows", []):
        if row["variant"] != "bare":
            found.append({"check": f"idle {row['variant']}: in the plugin < {IDLE_MAX_MS} ms (CPU, median)",
                          "value": f"{row['in_plugin_cpu_ms']:.2f} ms (wall {row['in_plugin_ms']:.2f}; process "
                                   f"{row['paired_wall_diff_ms']:+.1f} ms wall, {row['paired_cpu_diff_ms']:+.1f} ms cpu)",
                          "ok": row["in_plugin_cpu_ms"] < IDLE_MAX_MS})  # fmt: skip
    for row in (xdist or {}).get("rows", []):
        if row["variant"] != "bare":
            found.append({"check": f"xdist {row['variant']}: ratio to bare <= {XDIST_MAX_RATIO} (median of rounds)",
                          "value": f"{row['paired_ratio']:.3f} (range {row['ratio_range'][0]:.3f}-{row['ratio_range'][1]:.3f}, "
                                   f"fastest {row['min_ratio']:.3f}, cpu {row['cpu_ratio']:.3f})",
                          "ok": row["paired_ratio"] <= XDIST_MAX_RATIO})  # fmt: skip
    return found


def print_report(result: dict[str, Any]) -> None:
    print(f"plugin idle and xdist: nproc={os.cpu_count()}, python {platform.python_version()}, code {result['code']}, "
          f"load average {result['load']}")  # fmt: skip
    for label, where in result["versions"].items():
        print(f"  {label}: {where}")
    idle = result.get("idle")
    if idle:
        print(f"\nidle ({idle['rounds']} rounds; python -X importtime -m pytest --co -q on 20 tests)")
        print(f"{'variant':<16} {'wall ms':>8} {'cpu ms':>8} {'+wall ms':>9} {'+cpu ms':>8} {'ratio':>7} "
              f"{'plugin ms':>9} {'(min)':>7} {'plugin cpu':>10}")  # fmt: skip
        for row in idle["rows"]:
            print(f"{row['variant']:<16} {row['wall_ms']:>8.1f} {row['cpu_ms']:>8.1f} {row['paired_wall_diff_ms']:>+9.1f} "
                  f"{row['paired_cpu_diff_ms']:>+8.1f} {row['ratio']:>7.3f} {row['in_plugin_ms']:>9.2f} "
                  f"{row['in_plugin_min_ms']:>7.2f} {row['in_plugin_cpu_ms']:>10.2f}")  # fmt: skip
        for row in idle["rows"]:
            if row["variant"] != "bare":
                times = ", ".join(f"{m} {us / 1000:.2f} ms" for m, us in row.get("importtime_us", {}).items()) or "none"
                print(f"  {row['variant']}: package modules imported: {', '.join(row.get('modules', []))}")
                print(f"  {row['variant']}: -X importtime lists: {times}")
    xdist = result.get("xdist")
    if xdist:
        print(f"\nxdist (-n {xdist['workers']}, {xdist['tests']} tests, {xdist['rounds']} rounds)")
        print(f"{'variant':<16} {'wall s':>8} {'cpu s':>8} {'ratio':>7} {'range':>13} {'min ratio':>9} {'cpu ratio':>9}")
        for row in xdist["rows"]:
            low, high = row["ratio_range"]
            print(f"{row['variant']:<16} {row['wall_s']:>8.2f} {row['cpu_s']:>8.2f} {row['paired_ratio']:>7.3f} "
                  f"{low:>6.3f}-{high:<6.3f} {row['min_ratio']:>9.3f} {row['cpu_ratio']:>9.3f}")  # fmt: skip
        for row in xdist["rows"]:
            hooks = row["controller_hooks_s"]
            if hooks:
                print(f"  {row['variant']}: the controller's time in the plugin's hooks (one more run): "
                      + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in sorted(hooks.items(), key=lambda x: -x[1])))
    print()
    for v in result["verdicts"]:
        print(f"{v['check']:<62} {v['value']:<48} {'PASS' if v['ok'] else 'FAIL'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", metavar="REF", help="Also run the package at this commit (before/after in the same run)")
    parser.add_argument("--only", choices=("idle", "xdist"), help="Run one part only")
    parser.add_argument("--idle-rounds", type=int, default=30, help="Rounds of the idle part (default 30)")
    parser.add_argument("--rounds", type=int, default=5, help="Rounds of the xdist part (default 5)")
    parser.add_argument("--tests", type=int, default=20000, help="Tests in the xdist suite (default 20000)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (default 2)")
    parser.add_argument("--python", default=sys.executable, help="Interpreter that runs pytest (default: this one)")
    parser.add_argument("--json", action="store_true", help="Print the results as JSON")
    parser.add_argument("--check", action="store_true", help="Exit 1 when a verdict is FAIL")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary folder")
    parser.add_argument("--verbose", "-v", action="store_true", help="Print every timed run on stderr")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.idle_rounds < 1 or args.tests <= 50:
        parser.error("--rounds and --idle-rounds must be >= 1, --tests more than 50")
    scratch = Path(tempfile.mkdtemp(prefix="bench-idle-xdist-"))
    try:
        entry = installed_entry_module()
        folders: dict[str, Path] = {}
        versions: dict[str, str] = {}
        if args.old:
            extract(args.old, scratch / "old")
            folders["old"] = scratch / "old"
            versions["old"] = f"git archive {args.old}"
        versions["new"] = f"working tree snapshot {snapshot(scratch / 'new')}"
        folders["new"] = scratch / "new"
        for folder in folders.values():
            make_loadable(folder, entry)
            byte_compile(folder, args.python)
        result: dict[str, Any] = {
            "benchmark": "plugin_idle_xdist",
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "code": code_version(),
            "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "versions": versions,
        }
        if args.only in (None, "idle"):
            result["idle"] = measure_idle(args.python, folders, scratch, args.idle_rounds, args.verbose)
        if args.only in (None, "xdist"):
            result["xdist"] = measure_xdist(args.python, folders, scratch, args)
    except BenchError as exc:
        print(f"BENCHMARK ERROR: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"kept {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    result["verdicts"] = verdicts(result.get("idle"), result.get("xdist"))
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print_report(result)
    failed = [v for v in result["verdicts"] if not v["ok"]]
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
