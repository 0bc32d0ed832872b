"""Rule 1: zero learned entries in the scoring path, no network, deterministic verdicts."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from .conftest import FIXTURES, ROOT

PACKAGE = ROOT / "pytest_objective_scoring"

# Network clients and model clients: none may be imported by grading code.
DENIED = {
    "socket", "ssl", "http", "urllib.request", "requests", "httpx", "urllib3", "aiohttp", "websockets", "grpc",
    "openai", "anthropic", "litellm", "langchain", "transformers", "huggingface_hub", "torch", "tensorflow", "jax",
    "google.generativeai", "vertexai", "cohere", "mistralai", "ollama", "sentence_transformers", "sklearn",
}  # fmt: skip

GRADE = [
    "grade", "--repo", str(FIXTURES / "repos" / "csvlite"), "--instance", str(FIXTURES / "instances" / "csvlite.json"),
    "--patch", str(FIXTURES / "patches" / "csvlite" / "gold.diff"), "--json",
]  # fmt: skip

SCRIPT = """
import importlib.abc, io, json, sys, contextlib
denied = set(json.loads(sys.argv[3]))
if sys.argv[1] == "no-network":
    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in denied or name.split(".")[0] in denied:
                raise ImportError(f"the grader tried to import {name}")
            return None
    assert "socket" not in sys.modules
    sys.meta_path.insert(0, Refuse())
from pytest_objective_scoring.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(json.loads(sys.argv[2]))
envelope = json.loads(out.getvalue())
imported = sorted(m for m in sys.modules if m in denied or m.split(".")[0] in denied)
print(json.dumps({"code": code, "score": envelope["score"], "imported": imported}))
"""


def _imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_module_of_the_package_imports_a_network_or_model_client():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):  # the commands/ package too
        bad = {n for n in _imports_of(path) if n in DENIED or n.split(".")[0] in DENIED}
        if bad:
            offenders[path.name] = sorted(bad)
    assert offenders == {}


def _grade(mode: str) -> dict:
    result = subprocess.run([sys.executable, "-c", SCRIPT, mode, json.dumps(GRADE), json.dumps(sorted(DENIED))],
                            capture_output=True, text=True, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_grading_gives_the_same_verdict_with_network_modules_blocked_and_imports_no_client():
    normal = _grade("normal")
    guarded = _grade("no-network")  # socket, ssl, http clients and model clients cannot even be imported
    assert normal["code"] == guarded["code"] == 0
    for key in ("instance_id", "patch_ref", "resolved", "fail_to_pass", "pass_to_pass", "graded_by"):
        assert normal["score"][key] == guarded["score"][key]
    assert normal["imported"] == guarded["imported"] == []
