"""Container mode (issue 13): grading inside the image a benchmark ships, against a real engine.

The images are built here from the local base image that ``shared/tools/container-engine.sh`` makes
(Debian 12, Python 3.11, pytest, git), SWE-bench style: a fixture project at ``/testbed``,
committed, its environment the image's. Without podman and that image these tests skip.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from pytest_objective_scoring import container
from pytest_objective_scoring.runner import BadInput, GradeRequest, grade_candidate

from .conftest import FIXTURES
from .runner_helpers import grade, instance_of, make_patch, patch_of  # noqa: F401

BASE = "localhost/objective-base:bookworm"


def _engine_ready() -> bool:
    if shutil.which("podman") is None:
        return False
    try:
        return container.image_exists("podman", BASE)
    except container.ContainerError:
        return False


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _engine_ready(), reason=f"needs podman and {BASE} "
                                                   "(bash ../shared/tools/container-engine.sh)")]  # fmt: skip

CONTAINERFILE = """\
FROM {base}
COPY testbed /testbed
RUN cd /testbed && git init -q && git -c user.name=t -c user.email=t@t add -A \\
    && git -c user.name=t -c user.email=t@t commit -qm base
WORKDIR /testbed
"""


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


@pytest.fixture(scope="session")
def image_of(tmp_path_factory: pytest.TempPathFactory):
    """A SWE-bench-style image of a fixture project, built once per content (cached by the engine)."""
    built: dict[str, str] = {}

    def build(project: str) -> str:
        if project in built:
            return built[project]
        repo = FIXTURES / "repos" / project
        tag = f"localhost/objective-fixture:{project}-{_tree_digest(repo)}"
        if not container.image_exists("podman", tag):
            context = tmp_path_factory.mktemp(f"image-{project}")
            shutil.copytree(repo, context / "testbed", ignore=shutil.ignore_patterns("__pycache__"))
            (context / "Containerfile").write_text(CONTAINERFILE.format(base=BASE))
            done = subprocess.run(["podman", "build", "-q", "-t", tag, "-f", "Containerfile", "."], cwd=context,
                                  capture_output=True, text=True, timeout=600)  # fmt: skip
            assert done.returncode == 0, done.stderr
        built[project] = tag
        return tag

    return build


def in_container(project: str, patch: bytes, image: str, **kwargs) -> object:
    request = GradeRequest(repo=None, instance=kwargs.pop("instance", None) or instance_of(project), patch=patch,
                           engine="podman", image=image, python="python3", timeout=kwargs.pop("timeout", 120), **kwargs)
    return grade_candidate(request)


@pytest.mark.parametrize(("project", "candidates"), [("intervals", ("gold", "empty", "break_p2p", "tamper", "noapply")),
                                                     ("textstats", ("gold", "break_p2p"))])  # fmt: skip
def test_verdicts_in_the_image_equal_the_verdicts_on_this_machine(project, candidates, image_of):
    image = image_of(project)
    graded = {}
    for candidate in candidates:
        patch = patch_of(project, candidate)
        boxed, host = in_container(project, patch, image), grade(project, patch)
        graded[candidate] = boxed
        assert boxed.envelope["runner"].get("isolation", {}).get("mode") in ("container", None)  # None: no test ran
        assert (boxed.exit_code, boxed.failure_class) == (host.exit_code, host.failure_class), candidate
        assert boxed.envelope["score"]["resolved"] == host.envelope["score"]["resolved"], candidate
        ours = {t["id"]: t["outcome"] for t in boxed.envelope["tests"]}
        assert ours == {t["id"]: t["outcome"] for t in host.envelope["tests"]}, candidate
    gold = graded["gold"]
    assert gold.envelope["runner"]["isolation"] == {"mode": "container", "engine": "podman", "image": image,
                                                    "network": "none"}  # fmt: skip
    assert gold.envelope["session"]["exitstatus"] == 0
    assert gold.envelope["runner"]["repo"] == f"{image}:/testbed"


def test_a_hostile_candidate_in_the_container_cannot_reach_this_machine(image_of, tmp_path):
    image = image_of("intervals")
    ledger = tmp_path / "ledger.sqlite"
    ledger.write_bytes(b"the ledger\n")
    original = FIXTURES / "repos" / "intervals" / "src" / "intervals" / "interval.py"
    before = original.read_bytes()
    reach = textwrap.dedent(
        f"""
        import os as _os
        for _path in ({str(ledger)!r}, {str(original)!r}, "/work", "/root/.pyenv"):
            try:
                with open(_path, "a") as _handle:
                    _handle.write("# reached\\n")
            except OSError:
                pass
        """
    )
    source = (FIXTURES / "repos" / "intervals" / "src" / "intervals" / "interval.py").read_text() + reach
    diff = make_patch(FIXTURES / "repos" / "intervals", {"src/intervals/interval.py": source}, tmp_path)
    result = in_container("intervals", diff.encode(), image, hidden=(ledger,))
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert ledger.read_bytes() == b"the ledger\n"
    assert original.read_bytes() == before


def test_a_run_that_hangs_is_killed_and_its_container_removed(image_of, tmp_path):
    image = image_of("intervals")
    source = (FIXTURES / "repos" / "intervals" / "src" / "intervals" / "interval.py").read_text()
    diff = make_patch(FIXTURES / "repos" / "intervals", {"src/intervals/interval.py": source + "\nimport time\ntime.sleep(600)\n"},
                      tmp_path)  # fmt: skip
    result = in_container("intervals", diff.encode(), image, timeout=5)
    assert (result.envelope["score"]["resolved"], result.failure_class) == ("not_resolved", "solver")
    assert "timed out" in result.envelope["candidate_no_verdict_reason"]
    mine = f"name=objective-run-candidate-{os.getpid()}-"  # another worker's container tests run meanwhile
    left = subprocess.run(["podman", "ps", "-a", "--filter", mine, "--format", "{{.Names}}"],
                          capture_output=True, text=True, timeout=60).stdout.split()  # fmt: skip
    assert left == []


def test_no_network_in_the_container(image_of, tmp_path):
    image = image_of("intervals")
    offline = ("import socket\n\n\ndef test_offline():\n    try:\n"
               "        socket.create_connection(('192.0.2.1', 80), timeout=2)\n    except OSError:\n        return\n"
               "    raise AssertionError('the test process reached the network')\n")  # fmt: skip
    extra = make_patch(FIXTURES / "repos" / "intervals", {"tests/test_net.py": offline}, tmp_path)
    base = instance_of("intervals")
    instance = instance_of("intervals", PASS_TO_PASS=[*base.pass_to_pass, "tests/test_net.py::test_offline"],
                           test_patch=(base.test_patch or "") + extra)  # fmt: skip
    result = in_container("intervals", patch_of("intervals", "gold"), image, instance=instance)
    outcomes = {t["id"]: t["outcome"] for t in result.envelope["tests"]}
    assert outcomes["tests/test_net.py::test_offline"] == "passed"
    assert result.envelope["score"]["resolved"] == "resolved"


def test_a_missing_image_or_engine_is_bad_input():
    with pytest.raises(BadInput, match="no such image"):
        in_container("intervals", b"", "localhost/objective-fixture:does-not-exist")
    with pytest.raises(BadInput, match="expected one of"):
        grade_candidate(GradeRequest(repo=None, instance=instance_of("intervals"), patch=b"", engine="lxc",
                                     image="x", python="python3"))  # fmt: skip


def test_image_templates_and_swebench_naming():
    assert container.image_for("swebench", "django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    assert container.image_for("registry.local/{instance_id}:v1", "a__b-1") == "registry.local/a__b-1:v1"
    with pytest.raises(container.ContainerError, match="only"):
        container.image_for("x/{model}", "a__b-1")


def test_grade_on_the_command_line_in_an_image(image_of, tmp_path):
    from .runner_helpers import run_cli

    image = image_of("intervals")
    instance = FIXTURES / "instances" / "intervals.json"
    gold = FIXTURES / "patches" / "intervals" / "gold.diff"
    out = tmp_path / "score.json"
    done = run_cli("grade", "--instance", str(instance), "--patch", str(gold), "--engine", "podman", "--image", image,
                   "--no-ledger", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    import json

    envelope = json.loads(out.read_text())
    assert envelope["runner"]["isolation"]["mode"] == "container"
    assert envelope["runner"]["python"] == "python3"  # the image's own, by default
    both = run_cli("grade", "--instance", str(instance), "--patch", str(gold), "--image", image,
                   "--repo", str(FIXTURES / "repos" / "intervals"), "--no-ledger")  # fmt: skip
    assert both.returncode == 2 and "exclude each other" in both.stderr
    missing = run_cli("grade", "--instance", str(instance), "--patch", str(gold), "--engine", "podman",
                      "--image", "localhost/objective-fixture:nothing-{instance_id}", "--no-ledger")  # fmt: skip
    assert missing.returncode == 2 and "no such image" in missing.stderr


def test_a_batch_graded_entirely_in_images_needs_no_checkouts(image_of, tmp_path):
    import json

    from .runner_helpers import run_cli

    image = image_of("intervals")
    rows = [json.loads(line) for line in (FIXTURES / "datasets" / "fixtures.jsonl").read_text().splitlines() if line.strip()]
    row = next(r for r in rows if r["instance_id"] == "fixtures__intervals-1")
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "preds.jsonl").write_text(json.dumps({"instance_id": row["instance_id"], "model_name_or_path": "gold"}) + "\n")
    (tmp_path / "envs.json").write_text(json.dumps({row["instance_id"]: {"image": image, "python": "python3"}}))
    done = run_cli("grade-batch", "--dataset", str(tmp_path / "data.jsonl"), "--predictions", str(tmp_path / "preds.jsonl"),
                   "--environments", str(tmp_path / "envs.json"), "--ledger", str(tmp_path / "l.sqlite"),
                   "--log-dir", str(tmp_path / "logs"), "--report", str(tmp_path / "report.json"), "--json")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    results = report["results"] if isinstance(report, dict) and "results" in report else report
    assert any(r.get("score", {}).get("resolved") == "resolved" for r in results), results
    without = json.dumps({"other__id-1": {"image": image}})
    (tmp_path / "envs2.json").write_text(without)
    refused = run_cli("grade-batch", "--dataset", str(tmp_path / "data.jsonl"), "--predictions", str(tmp_path / "preds.jsonl"),
                      "--environments", str(tmp_path / "envs2.json"), "--python", "python3", "--ledger",
                      str(tmp_path / "l2.sqlite"), "--log-dir", str(tmp_path / "logs2"))  # fmt: skip
    assert refused.returncode == 2 and "--repos DIR is required" in refused.stderr, refused.stderr


def test_grade_batch_with_an_image_template_grades_each_instance_in_its_image(image_of, tmp_path):
    import json

    from .runner_helpers import run_cli

    image = image_of("intervals")
    rows = [json.loads(line) for line in (FIXTURES / "datasets" / "fixtures.jsonl").read_text().splitlines() if line.strip()]
    row = next(r for r in rows if r["instance_id"] == "fixtures__intervals-1")
    named = f"localhost/objective-fixture:{row['instance_id']}"
    assert subprocess.run(["podman", "tag", image, named], capture_output=True, timeout=60).returncode == 0
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "preds.jsonl").write_text(json.dumps({"instance_id": row["instance_id"], "model_name_or_path": "gold"}) + "\n")
    done = run_cli("grade-batch", "--dataset", str(tmp_path / "data.jsonl"), "--predictions", str(tmp_path / "preds.jsonl"),
                   "--image", "localhost/objective-fixture:{instance_id}", "--engine", "podman", "--python", "python3",
                   "--ledger", str(tmp_path / "l.sqlite"), "--log-dir", str(tmp_path / "logs"),
                   "--report", str(tmp_path / "report.json"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    text = (tmp_path / "report.json").read_text()
    assert named in text and '"resolved"' in text
    missing = run_cli("grade-batch", "--dataset", str(tmp_path / "data.jsonl"), "--predictions", str(tmp_path / "preds.jsonl"),
                      "--image", "localhost/objective-nothing:{instance_id}", "--ledger", str(tmp_path / "l2.sqlite"),
                      "--log-dir", str(tmp_path / "logs2"))  # fmt: skip
    assert missing.returncode == 2 and "no such image" in missing.stderr, missing.stderr


def test_an_audit_runs_its_gradings_in_the_image(image_of, tmp_path):
    import json

    from pytest_objective_scoring.ledger import Ledger

    from .runner_helpers import run_cli

    image = image_of("intervals")
    ledger = tmp_path / "ledger.sqlite"
    ran = run_cli("audit", "run", "--instance", str(FIXTURES / "instances" / "intervals.json"), "--repo",
                  str(FIXTURES / "repos" / "intervals"), "--repeats", "1", "--ledger", str(ledger), "--json",
                  "--image", image, "--engine", "podman", "--python", "python3")  # fmt: skip
    assert ran.returncode in (0, 1), ran.stdout + ran.stderr
    [audit] = json.loads(ran.stdout)["audits"]
    assert audit["complete"], audit
    with Ledger(ledger) as opened:
        [entry] = [e.data for e in opened.entries("audit")]
    assert entry["environment"]["image"] == image and entry["environment"]["python"] == "python3"
    with Ledger(ledger) as opened:
        runs = [e.data for e in opened.entries("score")]
    assert runs == [] or all((r.get("runner") or {}).get("isolation", {}).get("mode") in ("container", None) for r in runs)


@pytest.mark.parametrize(("project", "candidates"), [("recipes", ("gold", "empty", "break_p2p", "result_patch")),
                                                     ("sympy-mini", ("gold", "empty", "tamper")),
                                                     ("units", ("gold", "break_p2p"))])  # fmt: skip
def test_other_runners_in_the_image_give_the_verdicts_they_give_on_this_machine(project, candidates, image_of):
    """Django's layout, SymPy's bin/test and unittest run in a fresh container of the image, recorded
    through the same boot and program recorder, with the same verdicts and outcomes as here."""
    image = image_of(project)
    for candidate in candidates:
        patch = patch_of(project, candidate)
        boxed, host = in_container(project, patch, image), grade(project, patch)
        assert (boxed.exit_code, boxed.failure_class) == (host.exit_code, host.failure_class), candidate
        assert boxed.envelope["score"]["resolved"] == host.envelope["score"]["resolved"], candidate
        assert {t["id"]: t["outcome"] for t in boxed.envelope["tests"]} == {t["id"]: t["outcome"] for t in host.envelope["tests"]}
        flags = sorted(f["kind"] for f in boxed.envelope["integrity"]["flags"])
        assert flags == sorted(f["kind"] for f in host.envelope["integrity"]["flags"]), candidate
        if candidate == "gold":
            run = boxed.envelope["runner"]["run"]
            assert boxed.envelope["runner"]["isolation"]["mode"] == "container"
            assert run["command"][:4] == ["python3", "-I", "-S", "-B"]
            assert boxed.envelope["runner"]["test_command"]["runner"] == instance_of(project).get("runner")


def test_sympy_s_console_forgery_in_the_image_is_caught_as_on_this_machine(image_of):
    image = image_of("sympy-mini")
    boxed = in_container("sympy-mini", patch_of("sympy-mini", "print_ok"), image, compat="swebench")
    assert boxed.envelope["score"]["resolved"] == "not_resolved"
    assert [f["kind"] for f in boxed.envelope["integrity"]["flags"]] == ["console_disagrees"]
