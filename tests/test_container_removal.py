"""Removing a run's container: looked at after the removal, tried again while the engine refuses
(an engine's own clean-up of a killed run can hold the container for a moment). A fake engine on
``PATH`` plays the refusals, so this runs where no engine is installed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_objective_scoring import container

FAKE = """#!/bin/sh
# a fake engine: "rm" is refused until {refusals} tries were made; "container exists" answers
# whether the container is still there (0: it is)
count_file="{state}/tries"
tries=$(cat "$count_file" 2>/dev/null || echo 0)
echo "$@" >> "{state}/calls"
case "$1" in
  rm) tries=$((tries + 1)); echo "$tries" > "$count_file"
      if [ "$tries" -le {refusals} ]; then echo "container is being cleaned up" >&2; exit 2; fi
      touch "{state}/gone"; exit 0 ;;
  container) [ -e "{state}/gone" ] && exit 1; exit 0 ;;
esac
exit 0
"""


@pytest.fixture()
def fake_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def make(refusals: int) -> Path:
        state = tmp_path / "state"
        state.mkdir()
        engine = tmp_path / "bin" / "podman"
        engine.parent.mkdir()
        engine.write_text(FAKE.format(state=state, refusals=refusals))
        engine.chmod(engine.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", f"{engine.parent}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setattr(container.time, "sleep", lambda seconds: None)
        return state

    return make


def test_a_refused_removal_is_tried_again_until_the_container_is_gone(fake_engine):
    state = fake_engine(refusals=2)
    assert container.remove("podman", "objective-run-candidate-1-abc") is True
    calls = (state / "calls").read_text().splitlines()
    assert [c.split()[0] for c in calls] == ["rm", "container", "rm", "container", "rm", "container"]
    assert calls[-1] == "container exists objective-run-candidate-1-abc"


def test_a_container_that_will_not_go_is_reported_not_removed(fake_engine):
    state = fake_engine(refusals=99)
    assert container.remove("podman", "objective-run-candidate-1-abc", attempts=3) is False
    assert (state / "tries").read_text().strip() == "3"


def test_a_run_whose_client_ended_on_its_own_is_only_looked_for(fake_engine):
    # `run --rm` removed the container before its client returned: one look, no removal
    state = fake_engine(refusals=0)
    (state / "gone").touch()
    assert container.remove("podman", "objective-run-candidate-1-abc", ended=True) is True
    assert (state / "calls").read_text().splitlines() == ["container exists objective-run-candidate-1-abc"]


def test_a_container_still_there_after_its_client_ended_is_removed(fake_engine):
    state = fake_engine(refusals=1)
    assert container.remove("podman", "objective-run-candidate-1-abc", ended=True) is True
    calls = (state / "calls").read_text().splitlines()
    assert [c.split()[0] for c in calls] == ["container", "rm", "container", "rm", "container"]
