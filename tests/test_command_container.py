"""Other languages graded live (issue 30), against a real engine: a Go module, a Rust crate and a
JavaScript package and a Maven project of the fixtures, each in an image built here from the local
base image with Debian's toolchain (golang-go, cargo, nodejs and npm with jest from the npm registry,
openjdk and Maven with its plugins from Debian's repository, offline), SWE-bench
style: the project at ``/testbed``, committed. For each, gold resolves, empty does not, the tampering
change (an edit of the listed tests' file, a TestMain / a Cargo runner / a jest configuration that
would pass everything, the manifest) has its protected parts dropped and is not resolved, and a change
that breaks a PASS_TO_PASS test is not resolved. Without podman and the base image these tests skip;
building a toolchain's image the first time downloads its Debian packages (minutes).

Real benchmark rows graded the same way are in the closing note of issue 30 and
``docs/runner-languages.md`` (their code is not committed here)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_objective_scoring import container
from pytest_objective_scoring.runner import GradeRequest, grade_candidate

from .conftest import FIXTURES
from .runner_helpers import instance_of, patch_of
from .test_container_mode import BASE, CONTAINERFILE, _engine_ready, _tree_digest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _engine_ready(), reason=f"needs podman and {BASE} "
                                                   "(bash ../shared/tools/container-engine.sh)")]  # fmt: skip

TOOLCHAINS = {
    "go": "RUN apt-get update && apt-get install -y --no-install-recommends golang-go && rm -rf /var/lib/apt/lists/*\n"
          "ENV GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 GOPATH=/root/go GOCACHE=/root/.cache/go-build\n",
    "rust": "RUN apt-get update && apt-get install -y --no-install-recommends cargo && rm -rf /var/lib/apt/lists/*\n",
    "javascript": "RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/* "
                  "&& npm install -g --no-fund --no-audit --cafile /run/build-ca.crt jest@29.7.0\n",
    # Maven offline, every plugin and dependency from Debian's /usr/share/maven-repo (no Maven Central)
    "java": "RUN apt-get update && apt-get install -y --no-install-recommends default-jdk-headless maven libsurefire-java "
            "junit4 libmaven-compiler-plugin-java libmaven-resources-plugin-java && rm -rf /var/lib/apt/lists/* && printf "
            "'<settings><localRepository>/usr/share/maven-repo</localRepository><offline>true</offline></settings>' "
            "> /etc/objective-maven-settings.xml\n",
}  # fmt: skip


def _build(tag: str, context: Path, containerfile: str) -> None:
    (context / "Containerfile").write_text(containerfile)
    # the npm registry is reached through this machine's TLS setup: its CA bundle, for the build only
    bundle = Path(os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt")
    mount = ["-v", f"{bundle}:/run/build-ca.crt:ro"] if bundle.is_file() else []
    done = subprocess.run(["podman", "build", "-q", *mount, "-t", tag, "-f", "Containerfile", "."], cwd=context,
                          capture_output=True, text=True, timeout=1800, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="session")
def language_image(tmp_path_factory: pytest.TempPathFactory):
    """The image of a fixture project in its language's toolchain, each built once per content."""
    built: dict[str, str] = {}

    def build(project: str, language: str) -> str:
        if project in built:
            return built[project]
        import hashlib

        recipe = hashlib.sha256(TOOLCHAINS[language].encode()).hexdigest()[:10]
        toolchain = f"localhost/objective-toolchain:{language}-{recipe}"
        if not container.image_exists("podman", toolchain):
            _build(toolchain, tmp_path_factory.mktemp(f"toolchain-{language}"), f"FROM {BASE}\n{TOOLCHAINS[language]}")
        tag = f"localhost/objective-fixture:{project}-{_tree_digest(FIXTURES / 'repos' / project)}-{recipe}"
        if not container.image_exists("podman", tag):
            context = tmp_path_factory.mktemp(f"image-{project}")
            shutil.copytree(FIXTURES / "repos" / project, context / "testbed")
            _build(tag, context, CONTAINERFILE.format(base=toolchain))
        built[project] = tag
        return tag

    return build


def _grade(project: str, candidate: str, image: str) -> object:
    request = GradeRequest(repo=None, instance=instance_of(project), patch=patch_of(project, candidate), engine="podman",
                           image=image, python="python3", timeout=600)  # fmt: skip
    return grade_candidate(request)


CASES = {
    "go-spans": ("go", {"go.mod", "zz_main_test.go", "spans_test.go"}, "example.com/spans TestLen"),
    "rust-words": ("rust", {".cargo/config.toml", "Cargo.toml", "tests/count.rs"}, "words::longest first_of_equals"),
    "js-slug": ("javascript", {"package.json", "jest.config.js", "__tests__/slug.test.js"},
                "__tests__/slug.test.js->shortSlug cuts on a word boundary"),
    "java-cents": ("java", {"pom.xml", "src/test/java/com/example/cents/Cents.java",
                            "src/test/java/com/example/cents/CentsTest.java"},
                   "com.example.cents.CentsTest.formatsSmallAmounts"),
}  # fmt: skip


@pytest.mark.parametrize("project", list(CASES))
def test_gold_empty_tampering_and_a_broken_pass_to_pass_test_graded_live_in_the_image(project, language_image):
    language, dropped, broken = CASES[project]
    image = language_image(project, language)
    graded = {candidate: _grade(project, candidate, image) for candidate in ("gold", "empty", "tamper", "break_p2p")}
    gold = graded["gold"]
    assert (gold.exit_code, gold.failure_class) == (0, "none"), gold.envelope["runner"].get("failure_detail")
    runner = gold.envelope["runner"]
    assert runner["isolation"] == {"mode": "container", "engine": "podman", "image": image, "network": "none"}
    assert runner["test_command"]["language"] == language and runner["report"]["tests"] >= 4
    assert {t["id"]: t["outcome"] for t in gold.envelope["tests"]} == dict.fromkeys(
        [*instance_of(project).fail_to_pass, *instance_of(project).pass_to_pass], "passed")
    for candidate in ("empty", "tamper", "break_p2p"):
        result = graded[candidate]
        assert (result.exit_code, result.envelope["score"]["resolved"]) == (1, "not_resolved"), candidate
    outcomes = {t["id"]: t["outcome"] for t in graded["empty"].envelope["tests"]}
    assert all(outcomes[t] != "passed" for t in instance_of(project).fail_to_pass)
    assert all(outcomes[t] == "passed" for t in instance_of(project).pass_to_pass)
    tamper = graded["tamper"].envelope
    assert {d["path"] for d in tamper["runner"]["apply"]["dropped"]} == dropped
    broke = {t["id"]: t["outcome"] for t in graded["break_p2p"].envelope["tests"]}
    assert broke[broken] == "failed" and graded["break_p2p"].envelope["score"]["pass_to_pass"]["verdict"] == "violated"


def test_the_test_patch_goes_over_the_candidates_version_of_a_rust_file_that_holds_tests(language_image):
    """src/lib.rs holds the fix and a #[cfg(test)] module the test patch adds to: the candidate's fix is
    kept and the new unit test runs (a file of tests by role would have been reset to the base)."""
    gold = _grade("rust-words", "gold", language_image("rust-words", "rust")).envelope
    assert gold["runner"]["test_patch"]["over_the_candidate"] == ["src/lib.rs"]
    assert {t["id"]: t["outcome"] for t in gold["tests"]}["words tests::counts_words_across_lines"] == "passed"


def test_a_candidate_that_does_not_compile_is_a_build_failure_not_the_tests_verdict(language_image, tmp_path):
    image = language_image("go-spans", "go")
    broken = patch_of("go-spans", "gold").replace(b"s.Lo <= out[n-1].Hi+1 {", b"s.Lo <= out[n-1].Hi+ {")
    request = GradeRequest(repo=None, instance=instance_of("go-spans"), patch=broken, engine="podman", image=image,
                           python="python3", timeout=600)  # fmt: skip
    result = grade_candidate(request)
    assert (result.exit_code, result.failure_class) == (1, "build")
    assert result.envelope["runner"]["control_build"]["kind"] == "gold"
    assert "the build step fails with the candidate" in result.envelope["runner"]["failure_detail"]
