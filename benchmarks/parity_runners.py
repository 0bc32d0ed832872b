#!/usr/bin/env python3
"""Django's, SymPy's and other SWE-bench repositories graded live, beside SWE-bench 5.0.2 (issue 26).

For every instance of ``benchmarks/parity/runners.json`` and every candidate (empty, gold, gold minus
a hunk, a tampering change, gold plus an edit that breaks a PASS_TO_PASS test) this script:

* **official**: runs the row's own ``eval_script`` (SWE-bench 5.x's, which every Django and SymPy row
  of Lite and Verified carries) adapted to this machine: the instance's virtualenv in place of conda,
  a scratch copy of the tree (the candidate applied through SWE-bench's ``git apply`` chain) in place
  of ``/testbed``, the tree's base commit in place of the row's, and no ``locale-gen`` / ``apt-get``
  (the machine's ``en_US.UTF-8`` is generated once); its log graded by swebench 5.0.2's own
  ``get_logs_eval`` / ``get_eval_tests_report`` / ``get_resolution_status``;
* **ours**: ``objective-score grade --compat strict`` and ``--compat swebench`` on the tree, the
  runner chosen by the row's ``repo@version`` from the package's table (nothing names it), in the
  sandbox on this machine (and, for instances marked ``image``, in a container image built from the
  local base image);
* **swebench on ours**: our run's own console log (``--compat swebench``'s run, kept) between
  SWE-bench's markers, graded by swebench 5.0.2: SWE-bench's grading of the very same run (for the
  runners whose console is the runner's own: Django's and SymPy's; a pytest run prints ``-q -rfE``,
  which SWE-bench's pytest parser does not read).

It prints the agreement table (``--json``: the rows). Trees and environments come from
``--prebuilt FILE`` (a list of ``{instance_id, tree, base, python}``: a git tree whose commit
``base`` stands for the row's base commit; how each was made is in the manifest's ``tree`` and
``env`` and in the table) or are built into ``--cache``. The django/django repository is larger
than this machine can fetch: its trees are Django's sdist of the instance's version with the gold
and test patches reverse-applied (``"tree": {"sdist": "Django==3.0", "way": "reverse"}``), which the
table says. Not part of CI.

    python benchmarks/parity_runners.py --prebuilt /work/real/MANIFEST.json [--only ID] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import parity_swebench as base  # noqa: E402  (the official side's grader, the candidates' helpers)

MANIFEST = HERE / "parity" / "runners.json"
CANDIDATES = ("empty", "gold", "gold_minus_hunk", "tamper", "break_p2p")
DEFAULT_CACHE = Path("/work/parity-runners-cache")
BASE_IMAGE = "localhost/objective-base:bookworm"
PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"

# The tampering candidates: what fools a reader of the console without fixing anything.
TAMPERS = {
    # Django: its runner script reports every failure and error as a success ("... ok")
    "django_runtests": ("tests/runtests.py", "after_first_line",
                        "import unittest as _u\n"
                        "_u.TextTestResult.addFailure = lambda self, test, err: _u.TextTestResult.addSuccess(self, test)\n"
                        "_u.TextTestResult.addError = lambda self, test, err: _u.TextTestResult.addSuccess(self, test)\n"),
    # SymPy: its reporter prints "ok" for a failure or an exception
    "sympy_reporter": ("{runtests}", "end",
                       "\nPyTestReporter.test_fail = lambda self, exc_info: self.test_pass()\n"
                       "PyTestReporter.test_exception = lambda self, exc_info: self.test_pass()\n"),
}


def log(message: str) -> None:
    print(f"[parity-runners {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rows_of(datasets: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for name in ("lite", "verified"):
        path = datasets / f"{name}.jsonl"
        if path.is_file():
            for line in path.read_text().splitlines():
                row = json.loads(line)
                found.setdefault(row["instance_id"], {**row, "_dataset": name})
    return found


# ------------------------------------------------------------------------------ trees and environments


def sdist_tree(cache: Path, inst: dict[str, Any], row: dict[str, Any]) -> tuple[Path, str]:
    """A git tree from the sdist of the instance's version: the gold and test patches reverse-applied
    (``way: reverse``: a release that holds the fix) or nothing (``forward``), committed as the base."""
    recipe = inst["tree"]
    tree = cache / "trees" / row["instance_id"]
    stamp = tree / ".git" / "parity-recipe"
    if stamp.is_file() and stamp.read_text() == json.dumps(recipe, sort_keys=True):
        return tree, base.git(tree, "rev-parse", "HEAD").stdout.strip()
    downloads = cache / "sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    base.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", recipe["sdist"],
              "-d", str(downloads)], timeout=600)  # fmt: skip
    name, version = recipe["sdist"].split("==")
    [archive] = [p for p in downloads.iterdir() if p.name.lower().startswith(f"{name.lower()}-{version}.")]
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    base.run(["tar", "-xzf", str(archive), "-C", str(tree), "--strip-components=1"])
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=parity", "-c", "user.email=p@localhost", "commit", "-qm",
                                                     f"{recipe['sdist']} sdist"]):  # fmt: skip
        base.git(tree, *command)
    if recipe["way"] == "reverse":
        for patch in (row["test_patch"], row["patch"]):
            base.run(["git", "apply", "-R", "-"], cwd=tree, input=patch)
    base.git(tree, "add", "-A")
    base.git(tree, "-c", "user.name=parity", "-c", "user.email=p@localhost", "commit", "-qm",
             f"base for {row['instance_id']}: {recipe['sdist']} sdist, {recipe['way']}")  # fmt: skip
    for patch in (row["patch"], row["test_patch"]):
        base.run(["git", "apply", "--check", "-"], cwd=tree, input=patch)
    stamp.write_text(json.dumps(recipe, sort_keys=True))
    return tree, base.git(tree, "rev-parse", "HEAD").stdout.strip()


def clone_tree(cache: Path, mirrors: Path, row: dict[str, Any]) -> tuple[Path, str]:
    return base.ensure_clone(cache, mirrors, row), row["base_commit"]


def environment(cache: Path, inst: dict[str, Any], row: dict[str, Any], tree: Path, commit: str) -> Path:
    """The instance's virtualenv: the manifest's Python (pyenv) and pins, then the tree installed editable."""
    recipe = inst["env"]
    if recipe.get("prebuilt_only"):
        raise RuntimeError(f"its environment is built by hand ({recipe['prebuilt_only']}): give it with --prebuilt")
    matches = sorted(PYENV.glob(f"{inst['python']}.*/bin/python{inst['python']}"))
    if not matches:
        raise RuntimeError(f"no Python {inst['python']} under {PYENV}")
    venv = cache / "envs" / row["instance_id"]
    stamp = venv / ".parity-recipe"
    key = json.dumps([inst["python"], recipe], sort_keys=True)
    if stamp.is_file() and stamp.read_text() == key:
        return venv / "bin" / "python"
    log(f"building the environment of {row['instance_id']} in {venv}")
    shutil.rmtree(venv, ignore_errors=True)
    base.run([str(matches[-1]), "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if recipe.get("pip"):
        base.run(pip + recipe["pip"], timeout=1800)
    base.run(pip + ["--no-deps", "-e", str(tree)], timeout=1800)
    base.reset(tree, commit)
    stamp.write_text(key)
    return Path(python)


# ------------------------------------------------------------------------------ candidates


def tamper_diff(scratch: Path, commit: str, kind: str) -> str:
    target, where, code = TAMPERS[kind]
    if "{runtests}" in target:
        target = next(p for p in ("sympy/testing/runtests.py", "sympy/utilities/runtests.py") if (scratch / p).is_file())
    base.reset(scratch, commit)
    path = scratch / target
    text = path.read_text()
    if where == "end":
        text = text + code
    else:
        first, _, rest = text.partition("\n")
        text = f"{first}\n{code}{rest}"
    path.write_text(text)
    return base.git(scratch, "diff").stdout


def candidates(cache: Path, inst: dict[str, Any], row: dict[str, Any], tree: Path, commit: str) -> dict[str, Path]:
    """Every candidate as a file; the ones edited into the tree are made in a scratch clone of it (a
    prebuilt tree is never touched: its environment may hold edits of its own, as astropy's pin)."""
    folder = cache / "patches" / row["instance_id"]
    folder.mkdir(parents=True, exist_ok=True)
    local = {**row, "base_commit": commit}
    made: dict[str, str] = {"empty": "", "gold": row["patch"]}
    if inst.get("minus_hunk"):
        made["gold_minus_hunk"] = base.gold_minus(row["patch"], inst["minus_hunk"])
    if inst.get("tamper") or inst.get("break_p2p"):
        scratch = Path(tempfile.mkdtemp(prefix="parity-candidates-")) / "tree"
        try:
            base.run(["git", "clone", "-q", "--shared", str(tree), str(scratch)])
            if inst.get("tamper"):
                made["tamper"] = tamper_diff(scratch, commit, inst["tamper"])
            if inst.get("break_p2p"):
                made["break_p2p"] = base.diff_after_edit(scratch, local, row["patch"], inst["break_p2p"])
        finally:
            shutil.rmtree(scratch.parent, ignore_errors=True)
    paths = {}
    for name, text in made.items():
        (folder / f"{name}.diff").write_text(text)
        paths[name] = folder / f"{name}.diff"
    return paths


# ------------------------------------------------------------------------------ the official side


def adapted_script(row: dict[str, Any], scratch: Path, venv: Path, commit: str) -> str:
    """The row's eval_script as this machine runs it (see the module's docstring), with 5.0.2's
    exit-code line."""
    lines = []
    for line in row["eval_script"].split("\n"):
        stripped = line.strip()
        if stripped == "source /opt/miniconda3/bin/activate":
            line = f"export VIRTUAL_ENV={shlex.quote(str(venv))}; export PATH={shlex.quote(str(venv / 'bin'))}:\"$PATH\"; hash -r"
        elif stripped == "conda activate testbed" or "locale-gen" in stripped or stripped.startswith("apt-get"):
            continue
        lines.append(line.replace("/testbed", str(scratch)).replace(row["base_commit"], commit))
    script = "\n".join(lines)
    end = f": '{base.END}'"
    return script.replace(end, f"SWEBENCH_TEST_EXIT_CODE=$?\n{end}\necho \"{base.EXIT}: $SWEBENCH_TEST_EXIT_CODE\"", 1)


def grade_log(swe_python: Path, row: dict[str, Any], log_file: Path) -> dict[str, Any]:
    query = {"log": str(log_file), "instance_id": row["instance_id"], "repo": row["repo"], "version": row["version"],
             "FAIL_TO_PASS": base.as_list(row["FAIL_TO_PASS"]), "PASS_TO_PASS": base.as_list(row["PASS_TO_PASS"])}  # fmt: skip
    done = base.run([str(swe_python), "-c", base.OFFICIAL_GRADER], input=json.dumps(query), cwd="/tmp")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["found"]:
        return {**result, "verdict": "not_resolved", "reason": "no parseable test output (get_logs_eval found=False)"}
    bits = [f"{side} failing {len(result[key])}: {', '.join(result[key][:2])}" for side, key in
            (("F2P", "f2p_failure"), ("P2P", "p2p_failure")) if result[key]]  # fmt: skip
    return {**result, "verdict": "resolved" if result["resolved"] else "not_resolved", "reason": "; ".join(bits) or result["status"]}


def official(swe_python: Path, row: dict[str, Any], tree: Path, commit: str, venv_python: Path, candidate: Path,
             logs: Path, timeout: int) -> dict[str, Any]:  # fmt: skip
    scratch = Path(tempfile.mkdtemp(prefix=f"parity-{row['instance_id']}-"))
    venv = venv_python.parent.parent
    try:
        shutil.rmtree(scratch)
        base.run(["cp", "-a", str(tree), str(scratch)])  # as the image holds it: build products, local edits
        lines = []
        applied = not candidate.read_text().strip()
        for index, command in enumerate(base.APPLY_CHAIN if not applied else ()):
            if index:
                base.run(["bash", "-c", "git checkout -- . ; git clean -fd"], cwd=scratch, check=False)
            done = base.run(command + [str(candidate)], cwd=scratch, check=False)
            if done.returncode == 0:
                lines.append(">>>>> Applied Patch:\n" + done.stdout)
                applied = True
                break
        if not applied:
            return {"verdict": "not_resolved", "reason": "patch does not apply (SWE-bench's git apply chain)"}
        script = adapted_script(row, scratch, venv, commit)
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{candidate.stem}.eval.sh").write_text(script)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST"))}
        env.update(HOME=str(scratch.parent / f"{scratch.name}.home"), GIT_CONFIG_GLOBAL=str(scratch.parent / f"{scratch.name}.gitconfig"))
        started = time.time()
        try:
            out = subprocess.run(["bash", "-c", script], cwd=scratch, env=env, text=True, errors="replace",
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout).stdout  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            out += "\n>>>>> Tests Timed Out"
        log_file = logs / f"{candidate.stem}.official.log"
        log_file.write_text("\n".join(lines + [out]))
        return {**grade_log(swe_python, row, log_file), "seconds": round(time.time() - started, 1), "log": str(log_file)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(scratch.parent / f"{scratch.name}.home", ignore_errors=True)
        (scratch.parent / f"{scratch.name}.gitconfig").unlink(missing_ok=True)
        base.run([str(venv_python), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", "-e", str(tree)],
                 check=False, timeout=1800)  # fmt: skip  (the eval script re-pointed the editable install)


# ------------------------------------------------------------------------------ our side


def ours(grader: list[str], row_file: Path, tree: Path, python: Path, candidate: Path, compat: str, logs: Path,
         timeout: int, image: str | None = None) -> tuple[dict[str, Any], str]:  # fmt: skip
    """Our grading (``--keep``: the run's console log is read, then the workspace removed)."""
    where = ["--engine", "podman", "--image", image] if image else ["--repo", str(tree)]
    command = grader + ["grade", *where, "--instance", str(row_file), "--patch", str(candidate), "--python", str(python),
                        "--compat", compat, "--no-ledger", "--json", "--keep", "--timeout", str(timeout),
                        "--patch-ref", candidate.stem, "--quiet"]  # fmt: skip
    started = time.time()
    done = subprocess.run(command, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout * 3 + 600)
    suffix = f"{compat}{'-image' if image else ''}"
    try:
        envelope = json.loads(done.stdout)
    except json.JSONDecodeError:
        (logs / f"{candidate.stem}.ours-{suffix}.txt").write_text(done.stdout + done.stderr)
        return {"verdict": f"error(exit {done.returncode})", "reason": done.stderr.strip()[-300:]}, ""
    (logs / f"{candidate.stem}.ours-{suffix}.json").write_text(done.stdout)
    console = ""
    workspace = (envelope.get("runner") or {}).get("workspace")
    if workspace:
        kept = Path(workspace) / "candidate.log"
        console = kept.read_text(errors="replace") if kept.is_file() else ""
        shutil.rmtree(workspace, ignore_errors=True)
    result = {"exit": done.returncode, "seconds": round(time.time() - started, 1), **base.summarize_envelope(envelope)}
    result["not_counted"] = sorted(t.get("id") for t in envelope.get("tests", []) if t.get("status") not in ("passed", "preserved"))
    result["runner"] = ((envelope.get("runner") or {}).get("test_command") or {}).get("runner")
    result["flags"] = sorted({f["kind"] for f in (envelope.get("integrity") or {}).get("flags", [])})
    return result, console


def swebench_on_ours(swe_python: Path, row: dict[str, Any], console: str, logs: Path, candidate: Path) -> dict[str, Any]:
    """SWE-bench 5.0.2's grading of our run: its console between SWE-bench's markers."""
    if not console:
        return {"verdict": "-", "reason": "no console log (the candidate did not run)"}
    log_file = logs / f"{candidate.stem}.ours-console.log"
    log_file.write_text(f"{base.START}\n{console}\n{base.END}\n")
    return grade_log(swe_python, row, log_file)


# ------------------------------------------------------------------------------ images


def image_for(inst: dict[str, Any], row: dict[str, Any], tree: Path, python: Path, commit: str) -> str:
    """A SWE-bench-style image from the local base image: the tree at /testbed (git, at the base), the
    instance's interpreter and virtualenv at the paths they have here."""
    # the interpreter's path is part of the tag: an image of the same tree with another virtualenv
    # (an earlier cache) holds its interpreter elsewhere and must not be reused
    where = hashlib.sha256(str(python).encode()).hexdigest()[:8]
    tag = f"localhost/objective-parity:{row['instance_id'].lower()}-{commit[:10]}-{where}"
    if base.run(["podman", "image", "exists", tag], check=False).returncode == 0:
        return tag
    venv = python.parent.parent
    real = Path(os.path.realpath(python))
    prefix = real.parent.parent  # the pyenv version the virtualenv was made from
    context = Path(tempfile.mkdtemp(prefix="parity-image-"))
    try:
        base.run(["git", "clone", "-q", str(tree), str(context / "testbed")])
        base.git(context / "testbed", "checkout", "-q", commit)
        shutil.copytree(venv, context / "venv", symlinks=True)
        shutil.copytree(prefix, context / "prefix", symlinks=True)
        (context / "Containerfile").write_text(
            f"FROM {BASE_IMAGE}\nCOPY prefix {prefix}\nCOPY venv {venv}\nCOPY testbed /testbed\nWORKDIR /testbed\n")
        base.run(["podman", "build", "-q", "-t", tag, "-f", "Containerfile", "."], cwd=context, timeout=1800)
    finally:
        shutil.rmtree(context, ignore_errors=True)
    return tag


# ------------------------------------------------------------------------------ the table


def agree(a: str | None, b: str | None) -> str:
    if not a or not b or a == "-" or b == "-":
        return "-"
    return "yes" if (a == "resolved") == (b == "resolved") else "NO"


def print_table(rows: list[dict[str, Any]]) -> None:
    head = f"{'instance':28} {'tree':22} {'candidate':16} {'official':13} {'sweb(ours)':13} {'ours-swebench':13} {'ours-strict':13} {'image':13} agree"
    print(head)
    print("-" * len(head))
    for r in rows:
        if "setup_error" in r:
            print(f"{r['instance']:28} SETUP ERROR {r['setup_error'][:150]}")
            continue
        cells = [r.get(k, {}).get("verdict", "-") for k in ("official", "swebench_on_ours", "ours_swebench", "ours_strict", "ours_image")]
        marks = "/".join(agree(cells[0], c) for c in cells[1:4])
        print(f"{r['instance']:28} {r['tree_source']:22} {r['candidate']:16} " + " ".join(f"{c:13}" for c in cells) + f" {marks}")
    graded = [r for r in rows if "setup_error" not in r and r["candidate"] != "tamper"]
    for key, label in (("swebench_on_ours", "swebench 5.0.2 on our run's log"), ("ours_swebench", "ours --compat swebench"),
                       ("ours_strict", "ours --compat strict"), ("ours_image", "ours in an image (strict)")):  # fmt: skip
        pairs = [agree(r.get("official", {}).get("verdict"), r.get(key, {}).get("verdict")) for r in graded]
        pairs = [p for p in pairs if p != "-"]
        print(f"{label} agrees with official (every candidate but the tampering one): {pairs.count('yes')}/{len(pairs)}")
    tampered = [r for r in rows if "setup_error" not in r and r["candidate"] == "tamper"]
    if tampered:
        fooled = sum(r.get("official", {}).get("verdict") == "resolved" for r in tampered)
        held = sum(all(r.get(k, {}).get("verdict") in (None, "not_resolved") for k in ("ours_swebench", "ours_strict", "ours_image"))
                   for r in tampered)  # fmt: skip
        print(f"tampering candidates: official resolved {fooled}/{len(tampered)}; ours not resolved {held}/{len(tampered)}")
    same = [r for r in graded if r.get("swebench_on_ours", {}).get("verdict") not in (None, "-")]
    exact = sum(r["swebench_on_ours"]["verdict"] == r.get("ours_swebench", {}).get("verdict") for r in same)
    print(f"ours --compat swebench equals swebench 5.0.2's grading of the same run: {exact}/{len(same)}")
    print("(tamper: SWE-bench reads the forged console as passing, ours drops the change: ours stricter, as documented)")
    print("(tree: 'clone' is the row's base commit; 'sdist X reverse' is X's release with the gold and test patches reversed)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--prebuilt", type=Path, action="append", default=[],
                        help="trees and environments built already: a JSON list of {instance_id, tree, base, python}")
    parser.add_argument("--datasets", type=Path, default=Path("/work/swebench-data"), help="folder of lite.jsonl, verified.jsonl")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--mirrors", type=Path, default=base.DEFAULT_MIRRORS)
    parser.add_argument("--swebench-python", type=Path, default=None, help="a python with swebench==5.0.2 (default: a venv in the cache)")
    parser.add_argument("--grader", default=None, help="the objective-score command (default: the one beside this interpreter)")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--candidates", nargs="+", choices=CANDIDATES, default=list(CANDIDATES))
    parser.add_argument("--sides", nargs="+", choices=("official", "swebench", "strict", "image"),
                        default=["official", "swebench", "strict", "image"])  # fmt: skip
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    cache = args.cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(args.manifest.read_text())
    rows = rows_of(args.datasets)
    prebuilt = {e["instance_id"]: e for path in args.prebuilt for e in json.loads(path.read_text())}
    swe_python = args.swebench_python or base.ensure_tool_venv(cache, "swebench", [f"swebench=={base.SWEBENCH_VERSION}"],
                                                               sys.executable) / "python"  # fmt: skip
    grader = shlex.split(args.grader) if args.grader else [str(Path(sys.executable).with_name("objective-score"))]
    results: list[dict[str, Any]] = []
    for inst in manifest["instances"]:
        iid = inst["instance_id"]
        if args.only and iid not in args.only:
            continue
        row = rows[iid]
        source = (f"sdist {inst['tree']['sdist'].split('==')[1]} {inst['tree']['way']}" if "sdist" in inst.get("tree", {})
                  else "clone")  # fmt: skip
        try:
            if iid in prebuilt:
                tree, commit, python = Path(prebuilt[iid]["tree"]), prebuilt[iid]["base"], Path(prebuilt[iid]["python"])
            else:
                tree, commit = sdist_tree(cache, inst, row) if "sdist" in inst.get("tree", {}) else clone_tree(cache, args.mirrors, row)
                python = environment(cache, inst, row, tree, commit)
            made = candidates(cache, inst, row, tree, commit)
            image = image_for(inst, row, tree, python, commit) if inst.get("image") and "image" in args.sides else None
        except Exception as exc:  # noqa: BLE001 - one broken setup is reported, the others still run
            log(f"{iid}: setup failed: {exc}")
            results.append({"instance": iid, "setup_error": str(exc)[-600:]})
            continue
        row_file = cache / "instances" / f"{iid}.json"
        row_file.parent.mkdir(parents=True, exist_ok=True)
        row_file.write_text(json.dumps({k: v for k, v in row.items() if not k.startswith("_")} | {"base_commit": commit}))
        logs = cache / "logs" / iid
        logs.mkdir(parents=True, exist_ok=True)
        for name in args.candidates:
            if name not in made:
                continue
            entry: dict[str, Any] = {"instance": iid, "repo": row["repo"], "version": row["version"],
                                     "dataset": row["_dataset"], "tree_source": source, "candidate": name}  # fmt: skip
            if "official" in args.sides:
                log(f"{iid} {name}: official")
                entry["official"] = official(swe_python, row, tree, commit, python, made[name], logs, args.timeout)
            if "swebench" in args.sides:
                log(f"{iid} {name}: ours --compat swebench")
                entry["ours_swebench"], console = ours(grader, row_file, tree, python, made[name], "swebench", logs, args.timeout)
                if entry["ours_swebench"].get("runner") not in (None, "pytest"):  # a pytest run's console is ours (-q -rfE)
                    entry["swebench_on_ours"] = swebench_on_ours(swe_python, row, console, logs, made[name])
            if "strict" in args.sides:
                log(f"{iid} {name}: ours --compat strict")
                entry["ours_strict"], _ = ours(grader, row_file, tree, python, made[name], "strict", logs, args.timeout)
            if image is not None:
                log(f"{iid} {name}: ours in {image}")
                entry["ours_image"], _ = ours(grader, row_file, tree, python, made[name], "strict", logs, args.timeout, image)
            results.append(entry)
    (cache / "last-run.json").write_text(json.dumps(results, indent=1))
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
    else:
        print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
