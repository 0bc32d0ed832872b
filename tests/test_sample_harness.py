"""The sample harness (issue 7): plain data across processes, and samples that attack their checker.

HumanEval and MBPP samples run in a process of their own; the checks run in the checker, which
never runs the sample's code. These tests pin the codec that is the only thing crossing between
the two, then run real samples that try to forge, fake or escape their verdict.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import sample_harness
from pytest_objective_scoring.commands import samples as samples_commands
from pytest_objective_scoring.sample_harness import (
    decode_plain,
    encode_plain,
    imported_modules,
    preloaded,
    sample_names,
)
from pytest_objective_scoring.samples import Problem, Sample, build_report
from pytest_objective_scoring.testrun import isolation_prefix

pytestmark = pytest.mark.slow  # real gradings (docs/development.md: the fast subset)


def confinable() -> bool:
    """Whether this machine gives a process its own user and mount namespaces (what 'separate' needs)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return subprocess.run(["unshare", "--user", "--mount", "true"], check=False, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


CONFINED = "separate" if confinable() else "separate-unconfined"


# --- the codec ------------------------------------------------------------------------------------


PLAIN = [None, True, False, 0, -5, 10**5000, 2.5, -0.0, float("inf"), 1e-300, 3 + 4j, "", "ü\n\0", b"\x00\xff",
         [1, [2, (3, "x")]], (), (1,), {1, 2}, frozenset({"a"}), {"k": [1], 2: (None,), (1, 2): b"v"}]  # fmt: skip


@pytest.mark.parametrize("value", PLAIN, ids=[type(v).__name__ + str(i) for i, v in enumerate(PLAIN)])
def test_plain_data_round_trips_exactly_through_json(value: Any) -> None:
    back = decode_plain(json.loads(json.dumps(encode_plain(value))))
    assert back == value and type(back) is type(value)
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)


def test_nan_round_trips() -> None:
    assert math.isnan(decode_plain(json.loads(json.dumps(encode_plain(float("nan"))))))


class Always(list):  # type: ignore[type-arg]
    def __eq__(self, other: object) -> bool:
        return True


class Flag(int):
    pass


@pytest.mark.parametrize("value", [Always(), Flag(1), [Flag(1)], {"k": Always()}, object(), len, iter([1])])
def test_only_exact_builtin_types_are_plain_data(value: Any) -> None:
    """A subclass could carry the sample's own __eq__: it is never plain data."""
    with pytest.raises(TypeError, match="is not plain data"):
        encode_plain(value)
    assert encode_plain(value, ref=lambda obj: 7) == {"ref": 7} or isinstance(value, (list, dict))


def test_deep_nesting_is_refused_not_a_crash() -> None:
    deep: list[Any] = []
    for _ in range(150):
        deep = [deep]
    with pytest.raises(ValueError, match="nested"):
        encode_plain(deep)


@pytest.mark.parametrize("data", [3, 2.5, [1], {"int": 5}, {"list": "x"}, {"dict": [[1]]}, {"what": 1},
                                  {"int": "1", "float": "2"}, {"ref": 1}])  # fmt: skip
def test_decode_refuses_anything_but_the_encoding(data: Any) -> None:
    with pytest.raises(ValueError):
        decode_plain(data)


def test_names_the_checks_take_from_the_sample_and_modules_they_import() -> None:
    he = Problem(task_id="T", style="humaneval", where="p:1", prompt="import math\ndef helper(x):\n    return x\n"
                 "def f(x):\n    '''doc'''\n", entry_point="f",
                 test="def check(candidate):\n    import random, copy\n    assert candidate(helper(1)) == abs(-1)\n")  # fmt: skip
    assert sample_names(he) == ["candidate", "f", "helper"]  # builtins (abs) never; prompt names filtered by the checker
    assert imported_modules(he) == ["copy", "math", "random"]
    mbpp = Problem(task_id="7", style="mbpp", where="p:2", asserts=("assert max_chain(Pair(1, 2)) == 1",),
                   imports=("from os import path",))  # fmt: skip
    assert sample_names(mbpp) == ["Pair", "max_chain"] and imported_modules(mbpp) == ["os"]


# --- real runs ------------------------------------------------------------------------------------


def run(problem: Problem, text: str, tmp_path: Path, kind: str = "solution", timeout: float = 10, cold: bool = False) -> Any:
    """The sample's outcome. A HumanEval or MBPP sample runs in the warm runner (checked: it must, where
    namespaces allow), or with ``cold`` in a harness of its own, the way every other style runs."""
    sample = Sample(problem.task_id, 0, 1, kind, text)  # type: ignore[arg-type]
    pool = samples_commands.WarmPool(sys.executable, isolation_prefix(network=False), tmp_path, preloaded([problem]))
    if cold:
        pool.unavailable = "the cold way, on purpose"
    try:
        outcome = samples_commands.run_sample(problem, sample, python=sys.executable, timeout=timeout, root=tmp_path,
                                              prefix=isolation_prefix(network=False), pool=pool).outcome  # fmt: skip
    finally:
        pool.close()
    warm = pool.settings()
    if CONFINED == "separate" and not cold and problem.style in sample_harness.SPLIT_STYLES:
        assert warm["samples"] >= 1 and warm["lost"] == 0, warm  # it ran where the red team meant it to
    elif cold:
        assert warm["samples"] == 0
    return outcome


def mbpp(*asserts: str, setup: str = "", imports: tuple[str, ...] = ()) -> Problem:
    return Problem(task_id="m", style="mbpp", where="t:1", asserts=asserts, test=setup, imports=imports)


PAIR = "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n\n\n" \
       "def chain(pairs):\n    pairs = sorted(pairs, key=lambda p: p.b)\n    count, end = 0, None\n" \
       "    for p in pairs:\n        if end is None or p.a > end:\n            count, end = count + 1, p.b\n    return count\n"


@pytest.mark.slow
def test_objects_that_are_not_plain_data_go_back_to_the_sample_as_handles(tmp_path: Path) -> None:
    """MBPP 601's pattern: the asserts build the sample's own objects and pass them back to it."""
    problem = mbpp("assert chain([Pair(5, 24), Pair(15, 25), Pair(27, 40), Pair(50, 60)]) == 3")
    outcome = run(problem, PAIR, tmp_path)
    assert (outcome.status, outcome.isolation) == ("passed", CONFINED), outcome
    peek = mbpp("assert Pair(1, 2).a == 1")  # inspecting one is refused: its attributes are the sample's to fake
    outcome = run(peek, PAIR, tmp_path)
    assert outcome.status == "failed" and "is not plain data" in outcome.detail


@pytest.mark.slow
def test_exceptions_keep_their_builtin_type_and_results_their_exact_value(tmp_path: Path) -> None:
    problem = Problem(task_id="h", style="humaneval", where="t:1", prompt="def f(x, scale=1):\n    '''doc'''\n",
                      entry_point="f", test="def check(candidate):\n    assert candidate(2, scale=3) == (6, 2 ** 200, 0.5)\n"
                      "    try:\n        candidate(-1)\n    except ValueError as exc:\n        assert 'negative' in str(exc)\n"
                      "    else:\n        raise AssertionError('no ValueError')\n")  # fmt: skip
    good = "    if x < 0:\n        raise ValueError('negative input')\n    return (x * scale, 2 ** 200, x / 4)\n"
    assert run(problem, good, tmp_path, kind="completion").status == "passed"
    as_list = "    if x < 0:\n        raise ValueError('negative')\n    return [x * scale, 2 ** 200, x / 4]\n"
    assert run(problem, as_list, tmp_path, kind="completion").status == "failed"  # a list is not the tuple expected
    wrong_error = "    if x < 0:\n        raise KeyError('negative')\n    return (x * scale, 2 ** 200, x / 4)\n"
    outcome = run(problem, wrong_error, tmp_path, kind="completion")
    assert outcome.status == "failed" and "KeyError" in outcome.detail


@pytest.mark.slow
def test_the_problems_own_helpers_come_from_its_prompt_never_from_the_sample(tmp_path: Path) -> None:
    """HumanEval/38: check encodes with the prompt's encode_cyclic; a sample redefining it to the
    identity (with an identity decoder) must not pass."""
    prompt = ("def encode(s):\n    return s[::-1]\n\n\ndef decode(s):\n    '''Undo encode.'''\n")
    problem = Problem(task_id="h38", style="humaneval", where="t:1", prompt=prompt, entry_point="decode",
                      test="def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n")  # fmt: skip
    assert run(problem, "    return s[::-1]\n", tmp_path, kind="completion").status == "passed"
    cheat = "def encode(s):\n    return s\n\n\ndef decode(s):\n    return s\n"
    assert run(problem, cheat, tmp_path).status == "failed"


@pytest.mark.slow
def test_checks_that_need_the_sample_in_their_process_run_shared_and_say_so(tmp_path: Path) -> None:
    """Setup code whose objects are not plain data: the benchmark's own way (shared), labelled."""
    problem = mbpp("assert total(Node(1, Node(2, None))) == 3",
                   setup="class Node:\n    def __init__(self, value, next):\n        self.value, self.next = value, next\n")
    good = "def total(node):\n    return 0 if node is None else node.value + total(node.next)\n"
    passed = run(problem, good, tmp_path)
    assert (passed.status, passed.isolation) == ("passed", "shared"), passed
    failed = run(problem, "def total(node):\n    return 0\n", tmp_path)
    assert (failed.status, failed.isolation) == ("failed", "shared")
    results = [samples_commands.SampleResult(Sample("m", i, i + 1, "solution", ""), o) for i, o in enumerate((passed, failed))]
    report = build_report([problem], [r.sample for r in results], results, [1], None)
    assert report["problems"][0]["isolation"] == {"separate": 0, "separate-unconfined": 0, "shared": 2}
    assert report["summaries"][0]["hostile_resistant"] is False
    assert any(note.startswith("MBPP: 2 sample(s) ran in the checker's own process") for note in report["notes"])


FORGE = ("import gc, os\n\n\ndef f(x):\n    return None\n\n\nfor found in gc.get_objects():\n"
         "    if type(found).__name__ == 'function' and found.__name__ == 'emit' and found.__closure__:\n"
         "        found('passed', {'checks': 1})\nos._exit(0)\n")  # fmt: skip
FORGE_PROBLEM = Problem(task_id="forge", style="humaneval", where="t:1", prompt="", entry_point="f",
                        test="def check(candidate):\n    assert candidate(1) == 2\n")  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_a_sample_cannot_sign_its_own_verdict_when_split_and_could_when_shared(tmp_path: Path, cold: bool) -> None:
    """The reason for the split, shown both ways: in the checker's process (BigCodeBench's way) the
    sample finds the signer and forges a pass; in its own process there is nothing to find (in the
    warm runner: a fork of a process that never held a key, or a signer)."""
    split = run(FORGE_PROBLEM, FORGE, tmp_path, cold=cold)
    assert split.status == "failed" and split.isolation == CONFINED
    sample = Sample("forge", 0, 1, "solution", FORGE)
    shared = samples_commands._run_once(FORGE_PROBLEM, sample, python=sys.executable, timeout=10, root=tmp_path,
                                        prefix=[], isolation="shared").outcome  # fmt: skip
    assert (shared.status, shared.isolation) == ("passed", "shared")  # the forged verdict: why 'shared' is labelled
    rows = build_report([FORGE_PROBLEM], [sample], [samples_commands.SampleResult(sample, shared)], [1], None)
    assert rows["summaries"][0]["hostile_resistant"] is False
    assert any("could forge such a verdict" in note for note in rows["notes"])


ATTACKS = """import os


def attacks():
    checker, found = os.getppid(), {}
    for name, path, mode in (("memory", "/proc/%d/mem" % checker, "rb"), ("report", "/proc/%d/fd/1" % checker, "ab"),
                             ("environ", "/proc/%d/environ" % checker, "rb")):
        try:
            open(path, mode).close()
            found[name] = True
        except OSError:
            found[name] = False
    for name, directory in (("stdlib", os.path.dirname(os.__file__)), ("grader", GRADER), ("run", "/proc/%d/cwd" % checker)):
        target = os.path.join(directory, "objective-probe-%d" % os.getpid())
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(target)
            found[name] = True
        except OSError:
            found[name] = False
    try:
        with open("scratch.txt", "w") as handle:
            handle.write("mine")
        found["own"] = open("scratch.txt").read() == "mine"
    except OSError:
        found["own"] = False
    for name, path in (("sees_grader", GRADER), ("sees_problems", PROBLEMS), ("sees_harness", os.path.join(
            os.path.dirname(os.getcwd()), "harness.py")), ("sees_shadow", "/etc/shadow")):
        found[name] = os.path.exists(path)
    found["uid"] = os.getuid()
    return found
"""


@pytest.mark.slow
@pytest.mark.skipif(not confinable(), reason="needs user and mount namespaces (Linux): the grader labels such runs "
                    "separate-unconfined instead, which test_confinement_is_reported covers")  # fmt: skip
@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_the_sample_cannot_reach_its_checker_or_change_any_file_but_its_own(tmp_path: Path, cold: bool) -> None:
    grader = str(Path(samples_commands.__file__).parent.parent)
    problems = tmp_path / "problems.jsonl"  # where an answer key would be
    problems.write_text("{}\n")
    problem = mbpp("assert attacks() == {'memory': False, 'report': False, 'environ': False, 'stdlib': False, "
                   "'grader': False, 'run': False, 'own': True, 'sees_grader': False, 'sees_problems': False, "
                   "'sees_harness': False, 'sees_shadow': False, 'uid': 1000}")  # fmt: skip
    sample = ATTACKS.replace("GRADER", repr(grader)).replace("PROBLEMS", repr(str(problems)))
    outcome = run(problem, sample, tmp_path, cold=cold)
    assert (outcome.status, outcome.isolation) == ("passed", "separate"), outcome


@pytest.mark.slow
def test_confinement_is_reported_with_every_outcome(tmp_path: Path) -> None:
    outcome = run(mbpp("assert f() == 1"), "def f():\n    return 1\n", tmp_path)
    assert (outcome.status, outcome.isolation) == ("passed", CONFINED)
    assert outcome.to_dict()["isolation"] == CONFINED


@pytest.mark.slow
def test_the_harness_runs_on_python_3_9_too(tmp_path: Path) -> None:
    python = "/root/.pyenv/versions/3.9.18/bin/python"
    if not os.path.exists(python):
        pytest.skip("no Python 3.9 on this machine")
    problem = mbpp("assert chain([Pair(5, 24), Pair(15, 25), Pair(27, 40), Pair(50, 60)]) == 3")
    sample = Sample("m", 0, 1, "solution", PAIR)
    outcome = samples_commands.run_sample(problem, sample, python=python, timeout=20, root=tmp_path,
                                          prefix=isolation_prefix(network=False)).outcome  # fmt: skip
    assert (outcome.status, outcome.isolation) == ("passed", CONFINED), outcome
    assert sample_harness.SPLIT_STYLES == ("humaneval", "mbpp")


DEEP_FORGE = ("import gc, os\nfor found in gc.get_objects():\n"
              "    if type(found).__name__ == 'function' and getattr(found, '__name__', '') == 'emit' and found.__closure__:\n"
              "        found('passed', {'checks': 1})\n        os._exit(0)\n\n\n"
              "def Pair(a, b):\n    x = 'deep'\n    for _ in range(DEPTH):\n        x = [x]\n    return x\n\n\n"
              "def chain(pairs):\n    return 0\n")  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("depth", [49, 60, 101])
def test_a_sample_cannot_choose_to_run_in_the_checkers_process(tmp_path: Path, depth: int) -> None:
    """Red team: results nested so deep that the checks could not pass them back used to make the
    checks 'unsplittable', and the rerun in the checker's process let the sample sign its pass."""
    problem = Problem(task_id="m", style="mbpp", where="t:1", reference=PAIR,
                      asserts=("assert chain([Pair(5, 24), Pair(15, 25), Pair(27, 40), Pair(50, 60)]) == 3",))  # fmt: skip
    outcome = run(problem, DEEP_FORGE.replace("DEPTH", str(depth)), tmp_path)
    assert (outcome.status, outcome.isolation) == ("failed", CONFINED), outcome


STEERED = Problem(task_id="s", style="humaneval", where="t:1", prompt="", entry_point="f", reference="def f(x):\n    return x + 1\n",
                  test="def check(candidate):\n    r = candidate(1)\n    if r != 2:\n        r = iter([r])\n"
                  "    assert candidate(r) == 3\n")  # fmt: skip
NEEDS_SHARED = Problem(task_id="n", style="humaneval", where="t:1", prompt="", entry_point="apply",
                       reference="def apply(f, x):\n    return f(x)\n",
                       test="def check(candidate):\n    assert candidate(lambda v: v * 2, 4) == 8\n")  # fmt: skip


@pytest.mark.slow
def test_the_problems_reference_decides_whether_its_checks_can_run_split(tmp_path: Path) -> None:
    right = run(STEERED, "def f(x):\n    return x + 1\n", tmp_path)
    assert (right.status, right.isolation) == ("passed", CONFINED)
    steered = run(STEERED, "def f(x):\n    return 3\n", tmp_path)  # wrong, and would pass in the checker's process
    assert steered.status == "failed" and "reference solution runs split" in steered.detail, steered
    alone = samples_commands._run_once(STEERED, Sample("s", 0, 1, "solution", "def f(x):\n    return 3\n"),
                                       python=sys.executable, timeout=10, root=tmp_path, prefix=[], isolation="shared")
    assert alone.outcome.status == "passed"  # (what the rule prevents)
    shared = run(NEEDS_SHARED, "def apply(f, x):\n    return f(x)\n", tmp_path)  # a callback: only shared can run it
    assert (shared.status, shared.isolation) == ("passed", "shared"), shared
    wrong = run(NEEDS_SHARED, "def apply(f, x):\n    return x\n", tmp_path)
    assert (wrong.status, wrong.isolation) == ("failed", "shared")


@pytest.mark.slow
def test_stop_iteration_and_handle_text_cannot_satisfy_a_check(tmp_path: Path) -> None:
    stops = run(mbpp("assert all(map(is_even, [2, 4, 6]))"), "def is_even(x):\n    raise StopIteration\n", tmp_path)
    assert stops.status == "failed" and "StopIteration" in stops.detail, stops
    named = Problem(task_id="h", style="humaneval", where="t:1", prompt="", entry_point="f",
                    test="def check(candidate):\n    assert 'Yes' in str(candidate(3)) and 'Yes' in f'{candidate(3)}'\n")  # fmt: skip
    outcome = run(named, "def f(x):\n    return type('Yes', (), {})()\n", tmp_path)
    assert outcome.status == "failed", outcome


@pytest.mark.slow
def test_signals_from_the_sample_do_not_stop_its_checker(tmp_path: Path) -> None:
    problem = mbpp("assert f(1) == 2", "assert f(2) == 3")
    sample = ("import os, signal\n\n\ndef f(x):\n    for name in ('SIGINT', 'SIGTERM', 'SIGHUP', 'SIGUSR1', 'SIGALRM'):\n"
              "        try:\n            os.kill(os.getppid(), getattr(signal, name))\n        except OSError:\n"
              "            pass\n    return x + 1\n")  # fmt: skip
    outcome = run(problem, sample, tmp_path)
    assert (outcome.status, outcome.isolation) == ("passed", CONFINED), outcome


@pytest.mark.slow
@pytest.mark.skipif(not confinable() or not Path("/proc/sysvipc/msg").exists(), reason="needs Linux namespaces")
def test_the_sample_leaves_no_ipc_objects_behind(tmp_path: Path) -> None:
    key = 0x0B5C0DE
    sample = ("import ctypes\n\n\ndef f():\n    libc = ctypes.CDLL(None, use_errno=True)\n"
              f"    return libc.msgget({key}, 0o1600) >= 0\n")  # fmt: skip
    outcome = run(mbpp("assert f() is True"), sample, tmp_path)
    assert outcome.status == "passed", outcome  # it made a message queue...
    keys = [line.split()[0] for line in Path("/proc/sysvipc/msg").read_text().splitlines()[1:]]
    assert str(key) not in keys  # ...in an IPC namespace that died with it


@pytest.mark.slow
def test_the_sample_still_imports_what_the_interpreter_has_installed(tmp_path: Path) -> None:
    """Its own root keeps the interpreter's site-packages: a sample may use numpy, pandas, ..."""
    sample = "import pytest\nimport json\n\n\ndef f():\n    return [pytest.__name__, json.dumps([1])]\n"
    outcome = run(mbpp("assert f() == ['pytest', '[1]']"), sample, tmp_path)
    assert (outcome.status, outcome.isolation) == ("passed", CONFINED), outcome


# --- red team, round 2 ------------------------------------------------------------------------------


@pytest.mark.slow
def test_whatever_the_sample_leaves_behind_its_directory_is_removed(tmp_path: Path) -> None:
    """A tree 3,000 levels deep (Python's rmtree recursion limit) and a folder without permissions."""
    sample = ("import os\nfor _ in range(3000):\n    os.mkdir('a')\n    os.chdir('a')\nos.mkdir('locked')\n"
              "os.chmod('locked', 0)\n\n\ndef f(x):\n    return 0\n")  # fmt: skip
    outcome = run(mbpp("assert f(1) == 1"), sample, tmp_path)
    assert outcome.status == "failed" and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_checker_never_follows_a_link_the_sample_made(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top-secret-line\n")
    sample = (f"import os\nfor name in ('stderr.txt', 'sample-stderr.txt', '../sample-stderr.txt'):\n    try:\n"
              f"        os.symlink({str(secret)!r}, name)\n    except OSError:\n        pass\nos._exit(3)\n")  # fmt: skip
    outcome = run(mbpp("assert f(1) == 1"), sample, tmp_path)
    assert outcome.status == "failed" and "top-secret" not in outcome.detail, outcome


@pytest.mark.slow
def test_the_sample_cannot_lift_its_file_size_limit(tmp_path: Path) -> None:
    sample = ("import resource\n\n\ndef f():\n    try:\n"
              "        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
              "        return 'lifted'\n    except (ValueError, OSError):\n        pass\n    try:\n"
              "        with open('big', 'wb') as handle:\n            handle.write(b'x' * (65 * 2 ** 20))\n"
              "        return 'wrote'\n    except OSError:\n        return 'capped'\n")  # fmt: skip
    outcome = run(mbpp("assert f() == 'capped'"), sample, tmp_path)
    assert (outcome.status, outcome.isolation) == ("passed", CONFINED), outcome


@pytest.mark.slow
def test_a_module_the_checks_read_through_the_samples_import_is_the_checkers_own(tmp_path: Path) -> None:
    """MBPP asserts that use math without test_imports: they ran in the solution's namespace."""
    problem = mbpp("assert math.isclose(f(4), 2.0)", "assert m.pi > 3")
    sample = "import math\nimport math as m\n\n\ndef f(x):\n    return math.sqrt(x)\n"
    outcome = run(problem, sample, tmp_path)
    assert (outcome.status, outcome.isolation) == ("passed", CONFINED), outcome


@pytest.mark.slow
@pytest.mark.skipif(not confinable(), reason="needs Linux namespaces")
def test_a_correct_sample_has_what_ordinary_code_needs(tmp_path: Path) -> None:
    """/dev/stdin and friends, /tmp, /dev/shm (multiprocessing), HOME and its own source."""
    sample = ("import inspect, multiprocessing, os, tempfile\n\n\ndef f():\n"
              "    with open('/tmp/t', 'w') as handle:\n        handle.write('t')\n"
              "    with open(os.path.expanduser('~/h'), 'w') as handle:\n        handle.write('h')\n"
              "    lock = multiprocessing.Lock()\n    with tempfile.NamedTemporaryFile() as handle:\n        pass\n"
              "    return [os.path.exists('/dev/stdin'), os.path.exists('/dev/fd'), 'def f' in inspect.getsource(f),"
              " open('/tmp/t').read() + open(os.path.expanduser('~/h')).read(), lock.acquire(timeout=1)]\n")  # fmt: skip
    outcome = run(mbpp("assert f() == [True, True, True, 'th', True]"), sample, tmp_path)
    assert (outcome.status, outcome.isolation) == ("passed", "separate"), outcome
    from pytest_objective_scoring import samples

    program = ("import os, sys\nnumbers = open('/dev/stdin').read().split()\n"
               "with open(os.path.join(os.environ['TMPDIR'], 'x'), 'w') as handle:\n    handle.write('x')\n"
               "print(sum(map(int, numbers)))\n")  # fmt: skip
    lcb = Problem(task_id="l", style="livecodebench", where="t:1", cases=(samples.Case("1 2\n", "3\n", "public"),))
    outcome = run(lcb, program, tmp_path)
    assert (outcome.status, outcome.isolation) == ("passed", "separate"), outcome


def test_a_harness_whose_grader_died_ends_itself(tmp_path: Path) -> None:
    """Nobody left to kill it at the timeout: its own deadline ends it (and, as PID 1, its namespace)."""
    problem = mbpp("assert f() == 1")
    files = sample_harness.harness_files(problem, Sample("m", 0, 1, "solution", "def f():\n    while True:\n        pass\n"),
                                         timeout=1, key="k" * 64)  # fmt: skip
    spec = json.loads(files["spec.json"])
    assert spec["deadline"] == sample_harness.process_timeout(problem, 1) + sample_harness.DEADLINE_GRACE
    assert spec["timeout"] == 1  # its own clock of the sample's run (the grader allows STARTUP_GRACE more)
    spec["deadline"], spec["timeout"] = 2, 60  # the deadline first: as if the grader's kill never came
    files["spec.json"] = json.dumps(spec)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = subprocess.run([sys.executable, str(tmp_path / "harness.py")], cwd=tmp_path, capture_output=True, timeout=60,
                          check=False)  # fmt: skip
    assert done.returncode == 75
    time.sleep(0.5)
    assert _samples_of(tmp_path) == []  # its sample process (an endless loop) died with it


def _samples_of(root: Path) -> list[int]:
    """Sample processes still running whose environment points below ``root`` (their HOME)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"objective-score sample process" in command and str(root).encode() in environ:
            found.append(int(entry.name))
    return found
