"""Write the SWE-bench repository/version table the package ships (``pytest_objective_scoring/data/swebench_specs.json``).

SWE-bench 4.x keeps, for every Python repository and version of its datasets, how its environment
is built and which command runs its tests (``MAP_REPO_VERSION_TO_SPECS_PY`` in
``swebench/harness/constants/python.py``); 5.x takes the same from the dataset rows, which SWE-bench
Lite's and Verified's rows do not carry. This script reads that module out of swebench 4.1.0's wheel
(a data module: test commands, Python versions, packages) and writes it as JSON, with the runner each
command is for (``django`` for ``tests/runtests.py``, ``sympy`` for ``bin/test``, ``pytest``
otherwise) and where it came from. Nothing of swebench is imported into the package: the JSON is
the data.

    pip download --no-deps swebench==4.1.0 -d /tmp/swe4
    python benchmarks/make_swebench_specs.py /tmp/swe4/swebench-4.1.0-py3-none-any.whl

Not part of CI (it needs the wheel); ``tests/test_runner_choice.py`` checks the shipped file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

MODULE = "swebench/harness/constants/python.py"
TABLE = "MAP_REPO_VERSION_TO_SPECS_PY"
OUT = Path(__file__).resolve().parents[1] / "pytest_objective_scoring" / "data" / "swebench_specs.json"


def runner_of(test_cmd: Any) -> str | None:
    if not isinstance(test_cmd, str):
        return None
    if "tests/runtests.py" in test_cmd:
        return "django"
    if "bin/test" in test_cmd:
        return "sympy"
    if test_cmd.split()[0] in ("pytest", "tox"):
        return "pytest"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="swebench-4.1.0-py3-none-any.whl")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    wheel_bytes = args.wheel.read_bytes()
    with zipfile.ZipFile(args.wheel) as wheel:
        source = wheel.read(MODULE)
        info = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")).split("/")[0]
        version = info.removesuffix(".dist-info").split("-", 1)[1]
    namespace: dict[str, Any] = {}
    exec(compile(source, MODULE, "exec"), namespace)  # noqa: S102 - a module of constants
    specs: dict[str, dict[str, dict[str, Any]]] = namespace[TABLE]
    table: dict[str, dict[str, Any]] = {}
    excluded: dict[str, str] = {}
    for repo in sorted(specs):
        versions = {}
        for version_key in sorted(specs[repo], key=lambda v: [int(p) if p.isdigit() else p for p in v.lstrip("v").split(".")]):
            spec = dict(specs[repo][version_key])
            runner = runner_of(spec.get("test_cmd"))
            if runner is None:
                continue
            versions[version_key] = {"runner": runner, **spec}
        if versions:
            table[repo] = versions
        else:
            commands = sorted({repr(s.get("test_cmd")) for s in specs[repo].values()})
            excluded[repo] = f"no test command of a runner this package runs ({', '.join(commands)})"
    document = {
        "source": {
            "package": f"swebench {version} (PyPI)",
            "module": f"{MODULE}: {TABLE}",
            "module_sha256": hashlib.sha256(source).hexdigest(),
            "wheel_sha256": hashlib.sha256(wheel_bytes).hexdigest(),
            "note": "the last swebench release that holds the table: 5.x reads these specifications from the "
            "dataset rows, which SWE-bench Lite's and Verified's rows do not carry",
            "generated_by": "benchmarks/make_swebench_specs.py",
        },
        "runner_rule": "django: the test command runs tests/runtests.py; sympy: it runs bin/test; pytest: it runs "
        "pytest (or tox, whose environment runs pytest)",
        "excluded": excluded,
        "specs": table,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    count = sum(len(v) for v in table.values())
    print(f"{args.out}: {len(table)} repositories, {count} versions; excluded: {', '.join(excluded) or 'none'}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
