"""The scripts that run one sample, and what the grader gives them (``docs/functional.md``).

``harness.py`` (the *checker*) is written into a fresh directory for a sample and run by the
grader in a subprocess (a *cold run*); it reports in lines signed with a key only it holds. Run as
``harness.py serve`` it is the *warm runner* of one grading thread instead: it confines a
key-less *zygote* once and, per HumanEval or MBPP sample, forks a fresh confined sample process
(from the zygote) and a fresh checker (from itself); see :mod:`.sample_warm`. What runs where:

* **HumanEval / EvoEval and MBPP** (``split``): the checker never runs the sample's code. It
  starts a second interpreter, the *sample process* (:data:`SERVER`), which runs the sample and
  answers the checker's calls of its functions. Only plain data crosses between the two
  (:func:`encode_plain`): a result of any other type stays in the sample's process as an opaque
  handle the checks can pass back but never compare. The checker makes itself undumpable and
  gives the sample process namespaces, an unprivileged uid and a root of its own (``Sandbox``),
  so the sample cannot read the checker's key or the answers, write to its output, change its
  checks or poison a later run: the verdict cannot be forged.
* **LiveCodeBench** (stdin programs): every case runs the program in its own confined process
  (the same ``Sandbox``);
  the checker reports exit statuses and output digests and the grader compares them.
* **BigCodeBench** (``shared``), and a HumanEval or MBPP problem whose checks pass the sample an
  object that is not plain data: the sample runs inside the checker's process, as the benchmark's
  own harness runs it. Such a verdict is labelled not hostile-resistant.

The scripts work on Python 3.6 and later, in the sample's own interpreter, so they import nothing
of this package: each is assembled here as source text (:func:`harness_source`,
:func:`server_source`) from

* :mod:`.sample_checker` (``harness.py``'s docstring, imports, the signed report and the cold
  run's checks), :mod:`.sample_sandbox` (``Sandbox``: how a sample's process is confined) and
  :mod:`.sample_warm` (``harness.py serve``): together :data:`HARNESS`;
* :data:`SERVER` and :data:`SERVE` below (the sample process, which both scripts contain);
* the functions this module shares with the scripts (:func:`encode_plain`, :func:`decode_plain`,
  :func:`describe_exception`) and the very :func:`.samples.normalize_output` the grader compares
  with, copied from their definitions, so the grader and the scripts agree by construction;
* the runner's sandbox's primitives (:func:`.sandbox.shared_source`: the namespaces, uid and gid
  maps, a root of its own and its read-only remounts, PR_SET_PDEATHSIG), the one copy both
  sandboxes use.

The rest of this module is the grader's side: the spec a run is given and what its report says.
"""

from __future__ import annotations

import ast
import base64
import builtins
import functools
import inspect
import json
import sys
import traceback
from collections.abc import Iterable
from typing import Any, Final

from .sample_checker import CHECKER
from .sample_sandbox import SANDBOX
from .sample_warm import WARM
from .samples import (
    STDIN_GRACE,
    Problem,
    Sample,
    canonical_line,
    normalize_output,
    output_digest,
    program_of,
)

__all__ = [
    "HARNESS",
    "SERVER",
    "decode_plain",
    "describe_exception",
    "encode_plain",
    "harness_files",
    "harness_source",
    "harness_spec",
    "imported_modules",
    "isolation_of",
    "problem_spec",
    "process_timeout",
    "sample_names",
    "server_source",
]

SPLIT_STYLES: Final = ("humaneval", "mbpp")
DEADLINE_GRACE: Final = 10.0  # seconds a harness outlives its timeout when nobody kills it (a dead grader)
STARTUP_GRACE: Final = 10.0  # seconds a cold harness may take to start before the sample's own clock starts
PLAIN_DEPTH: Final = 100


# --- shared with the scripts (copied into them verbatim: Python 3.6 syntax, no annotations) -------


def encode_plain(value, ref=None, depth=0):  # type: ignore[no-untyped-def]
    """``value`` as tagged JSON, if it is plain data: None, bool and str as themselves; int, float,
    complex, bytes, list, tuple, set, frozenset and dict tagged with their type. Only these exact
    types (never a subclass, whose methods the sample could have written) are plain. ``ref`` maps
    any other object to a handle id, else such an object raises TypeError."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if depth > 100:  # decode_plain stops at 50: what the checks wrap around a sample's result still encodes
        raise ValueError("nested more than 100 levels deep")
    if kind is int:
        return {"int": hex(value)}
    if kind is float:
        return {"float": value.hex()}
    if kind is complex:
        return {"complex": [value.real.hex(), value.imag.hex()]}
    if kind is bytes:
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return {kind.__name__: [encode_plain(item, ref, depth + 1) for item in value]}
    if kind is dict:
        return {"dict": [[encode_plain(k, ref, depth + 1), encode_plain(v, ref, depth + 1)] for k, v in value.items()]}
    if ref is not None:
        return {"ref": ref(value)}
    raise TypeError("a %s object is not plain data" % getattr(kind, "__name__", "?"))  # noqa: UP031 (Python 3.6)


def decode_plain(value, ref=None, depth=0):  # type: ignore[no-untyped-def]
    """The value :func:`encode_plain` encoded; ValueError for anything else. ``ref`` maps a handle
    id back to its object (only the sample process holds objects behind handles)."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is not dict or len(value) != 1 or depth > 50:
        raise ValueError("not an encoding of plain data (or nested more than 50 levels deep)")
    tag, body = next(iter(value.items()))
    if tag == "int" and type(body) is str:
        return int(body, 16)
    if tag == "float" and type(body) is str:
        return float.fromhex(body)
    if tag == "complex" and type(body) is list and len(body) == 2:
        return complex(float.fromhex(body[0]), float.fromhex(body[1]))
    if tag == "bytes" and type(body) is str:
        return base64.b64decode(body.encode("ascii"), validate=True)
    if tag in ("list", "tuple", "set", "frozenset") and type(body) is list:
        items = [decode_plain(item, ref, depth + 1) for item in body]
        return items if tag == "list" else {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict" and type(body) is list:
        pairs = []
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("not an encoding of plain data")
            pairs.append((decode_plain(pair[0], ref, depth + 1), decode_plain(pair[1], ref, depth + 1)))
        return dict(pairs)
    if tag == "ref" and ref is not None and type(body) is int:
        return ref(body)
    raise ValueError("not an encoding of plain data (%r)" % (tag,))  # noqa: UP031 (Python 3.6)


def describe_exception(exc, sources):  # type: ignore[no-untyped-def]
    """``Type: message [file line N: source]`` for the innermost frame in one of ``sources``; never raises."""
    try:
        name = type(exc).__name__
        name = name if type(name) is str else "Exception"
    except BaseException:  # noqa: BLE001 (it must never raise)
        name = "Exception"
    try:
        message = str(exc)
        message = message if type(message) is str else ""
    except BaseException:  # noqa: BLE001
        message = ""
    text = name + (": " + message if message else "")
    try:
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            source = sources.get(frame.filename)
            if source is not None:
                lines = source.splitlines()
                line = lines[frame.lineno - 1].strip() if 0 < frame.lineno <= len(lines) else ""
                text += " [%s line %d: %s]" % (frame.filename, frame.lineno, line)  # noqa: UP031
                break
    except BaseException:  # noqa: BLE001, S110
        pass
    return text[:600]


# --- the checker: harness.py (sample_checker, sample_sandbox and sample_warm) ---------------------


HARNESS: Final = CHECKER + SANDBOX + WARM
MAIN: Final = '''  # both scripts end with it: an error in the script itself exits 70
if __name__ == "__main__":
    try:
        main()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(70)
'''


# --- the sample process ---------------------------------------------------------------------------


SERVER: Final = r'''"""objective-score sample process: runs one sample's code and answers the checker's calls.

One JSON line in, one JSON line out, on the pipes the checker gave as stdin and stdout (the
sample's own stdin and stdout are /dev/null and stderr). Only plain data crosses; any other
result stays here behind a handle (docs/functional.md). Python 3.6 and later.
"""
import base64
import json
import os
import sys
import traceback
import types

'''
SERVE: Final = r'''

def _type_name(value):
    try:
        name = type(value).__name__
        return name if type(name) is str else "object"
    except BaseException:
        return "object"


def serve_sample():
    """The sample's side of a split run, on the pipes it was given as its stdin and stdout (in the
    sample process the checker started, or in the one the warm runner forked)."""
    incoming, outgoing = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    handles = {}

    def reply(message):
        outgoing.write(json.dumps(message).encode("utf-8") + b"\n")
        outgoing.flush()

    def read():
        line = incoming.readline()
        if not line:
            os._exit(0)
        return json.loads(line.decode("utf-8"))

    def keep(value):
        handles[len(handles)] = value
        return len(handles) - 1

    request = read()
    source = request["source"]
    sources = {"solution.py": source}
    try:  # on disk too, in its own directory, for code that reads its own source (inspect.getsource)
        with open("solution.py", "w", encoding="utf-8") as handle:
            handle.write(source)
    except (OSError, ValueError):
        pass
    try:
        code = compile(source, "solution.py", "exec")
    except BaseException as exc:
        reply({"error": describe_exception(exc, sources), "phase": "compile"})
        return
    module = types.ModuleType("solution")
    module.__file__ = os.path.abspath("solution.py")
    sys.modules["solution"] = module
    namespace = module.__dict__
    try:
        exec(code, namespace)
    except Exception as exc:
        reply({"error": describe_exception(exc, sources), "phase": "solution"})
        return
    except BaseException as exc:
        reply({"escaped": describe_exception(exc, sources)})
        return
    names = {}
    for name in request["names"]:
        if name not in namespace:
            names[name] = {"kind": "missing"}
            continue
        value = namespace[name]
        if isinstance(value, types.ModuleType) and type(getattr(value, "__name__", None)) is str:
            names[name] = {"kind": "module", "module": value.__name__}
            continue
        if callable(value):
            names[name] = {"kind": "callable"}
            continue
        try:
            names[name] = {"kind": "value", "value": encode_plain(value)}
        except Exception:
            names[name] = {"kind": "ref", "ref": keep(value), "type": _type_name(value)}
    reply({"names": names})
    while True:
        request = read()
        target = request["target"]
        function = namespace.get(target) if type(target) is str else handles.get(target["ref"])
        args = [decode_plain(item, handles.__getitem__) for item in request["args"]]
        kwargs = dict((key, decode_plain(item, handles.__getitem__)) for key, item in request["kwargs"].items())
        try:
            result = function(*args, **kwargs)
        except Exception as exc:
            kind = type(exc)
            reply({"raised": _type_name(exc), "module": getattr(kind, "__module__", None) if type(getattr(kind, "__module__", None)) is str else None,
                   "detail": describe_exception(exc, sources)})
            continue
        except BaseException as exc:
            reply({"escaped": describe_exception(exc, sources)})
            return
        try:
            reply({"value": encode_plain(result)})
        except Exception:
            reply({"ref": keep(result), "type": _type_name(result)})


'''
SERVER_MAIN: Final = '''
def main():
    serve_sample()

'''


def _shared_functions() -> str:
    return "\n\n".join(inspect.getsource(f) for f in (encode_plain, decode_plain, describe_exception)) + "\n\n"


@functools.lru_cache(maxsize=1)
def harness_source() -> str:
    """The checker script: :data:`HARNESS`, the shared functions, the very :func:`normalize_output`
    the grader compares with, the runner's sandbox's primitives, and main."""
    compare = inspect.getsource(canonical_line) + "\n\n" + inspect.getsource(normalize_output)
    from .sandbox import shared_source

    return HARNESS + SERVE + _shared_functions() + shared_source() + compare + MAIN


@functools.lru_cache(maxsize=1)
def server_source() -> str:
    """The sample process's script: :data:`SERVER` and the shared functions."""
    return SERVER + SERVE + SERVER_MAIN + _shared_functions() + MAIN


def _trees(texts: list[str]) -> list[ast.Module]:
    trees = []
    for text in texts:
        try:
            trees.append(ast.parse(text))
        except (SyntaxError, ValueError):
            continue
    return trees


def sample_names(problem: Problem) -> list[str]:
    """The names the checks read (sorted): the checker asks the sample's process for those the
    problem's own code does not define and that are not builtins, and always for the entry point."""
    names = {problem.entry_point} if problem.entry_point else set()
    for tree in _trees([problem.test, *problem.asserts]):
        names.update(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))
    return sorted(n for n in names if n == problem.entry_point or not hasattr(builtins, n))


def imported_modules(problem: Problem) -> list[str]:
    """Every module the problem's own code imports, anywhere (HumanEval/32 imports inside check):
    the checker imports them all before the sample's process starts."""
    modules: set[str] = set()
    for tree in _trees([problem.prompt, problem.test, *problem.imports, *problem.asserts]):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module)
    return sorted(modules)


def harness_spec(problem: Problem, sample: Sample, timeout: float, isolation: str = "split") -> dict[str, Any]:
    """What the harness needs to run one sample. A stdin problem's expected outputs stay with the
    grader: the harness only gets their digests (to stop at the first wrong case). ``isolation``
    ``split`` runs a HumanEval or MBPP sample in its own process; ``shared`` in the checker's."""
    program = program_of(problem, sample)
    deadline = process_timeout(problem, timeout) + DEADLINE_GRACE
    if problem.style == "livecodebench":
        return {"style": problem.style, "program": program, "budget": timeout, "deadline": deadline,
                "cases": [{"input": case.input, "digest": output_digest(case.output)} for case in problem.cases]}  # fmt: skip
    spec = {"style": problem.style, "solution": program, "test": problem.test, "entry_point": problem.entry_point,
            "asserts": list(problem.asserts), "imports": list(problem.imports), "test_classes": list(problem.test_classes),
            "isolation": "split" if isolation == "split" and problem.style in SPLIT_STYLES else "shared",
            "deadline": deadline, "timeout": timeout}  # fmt: skip
    if spec["isolation"] == "split":
        spec.update(names=sample_names(problem), modules=imported_modules(problem), server=server_source(),
                    prompt=problem.prompt if problem.style == "humaneval" else "")  # fmt: skip
    return spec


def problem_spec(problem: Problem) -> dict[str, Any]:
    """What the warm runner needs to load a HumanEval or MBPP problem once for all its samples: the
    split spec without the sample (``harness.py serve``, message ``problem``)."""
    if problem.style not in SPLIT_STYLES:
        raise ValueError(f"{problem.task_id}: a {problem.style} problem does not run split")
    spec = harness_spec(problem, Sample(problem.task_id, -1, 0, "solution", ""), 0.0)
    return {key: spec[key] for key in ("style", "test", "entry_point", "asserts", "imports", "names", "modules", "prompt")}


def preloaded(problems: Iterable[Problem]) -> list[str]:
    """The standard-library modules the HumanEval and MBPP problems' own code imports (``typing`` for
    most of HumanEval): the warm runner imports them once, before it forks anything, so no sample
    process pays for them. Any other module is imported where it is used, as before."""
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    names = {name for problem in problems if problem.style in SPLIT_STYLES for name in imported_modules(problem)}
    return sorted(name for name in names if name.split(".")[0] in stdlib)


def harness_files(problem: Problem, sample: Sample, timeout: float, key: str, isolation: str = "split") -> dict[str, str]:
    """The files one sample's run directory starts with: ``harness.py``, ``spec.json`` and ``key``."""
    spec = harness_spec(problem, sample, timeout, isolation)
    return {"harness.py": harness_source(), "spec.json": json.dumps(spec), "key": key}


def process_timeout(problem: Problem, timeout: float) -> float:
    """How long a cold harness process may run: the sample's own timeout, which the harness measures
    from the start of the sample's run (:func:`_sample_clock`; a stdin problem's cases share it from
    the moment the program compiled, and its harness gets :data:`STDIN_GRACE` more seconds to report
    which case ran out), plus :data:`STARTUP_GRACE` for the harness's own start-up."""
    return timeout + STARTUP_GRACE + (STDIN_GRACE if problem.style == "livecodebench" else 0.0)


def isolation_of(detail: dict[str, Any] | None) -> dict[str, Any]:
    """What a run's signed ``sandbox`` message says about where the sample ran; unknown without one."""
    if not detail or detail.get("isolation") not in ("separate", "separate-unconfined", "shared"):
        return {"isolation": None, "hostile_resistant": False, "detail": "the run ended before the sample's process started"}
    return {"isolation": detail["isolation"], "hostile_resistant": detail["isolation"] == "separate",
            "sample_process": detail.get("sample_process"), "detail": str(detail.get("detail", ""))}
