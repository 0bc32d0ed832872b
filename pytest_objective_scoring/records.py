"""The spec's records, with exactly their fields (spec section 5.1).

``Score`` and ``TestGate`` are frozen dataclasses whose verdicts are *properties*
computed from the counts: there is no constructor argument, attribute or
``from_dict`` key through which a caller can set ``resolved`` or ``verdict``.
``from_dict`` accepts a serialised verdict only to check it against the derived
one, and refuses a record that disagrees.

This module never imports pytest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, Mapping

__all__ = [
    "NOT_RESOLVED",
    "RESOLVED",
    "SATISFIED",
    "VIOLATED",
    "RecordError",
    "Score",
    "TestGate",
]

Resolution = Literal["resolved", "not_resolved"]
GateVerdict = Literal["satisfied", "violated"]

RESOLVED: Final = "resolved"
NOT_RESOLVED: Final = "not_resolved"
SATISFIED: Final = "satisfied"
VIOLATED: Final = "violated"

TESTGATE_FIELDS: Final = ("total", "passed", "verdict")
SCORE_FIELDS: Final = (
    "instance_id",
    "patch_ref",
    "resolved",
    "fail_to_pass",
    "pass_to_pass",
    "graded_by",
    "graded_at",
)


class RecordError(ValueError):
    """A record that does not have the spec's shape or contradicts its own counts."""


def _require_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{name} must be an integer, got {value!r}")
    return value


def _require_str(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise RecordError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _exact_keys(record: str, data: Mapping[str, Any], fields: tuple[str, ...]) -> None:
    if not isinstance(data, Mapping):
        raise RecordError(f"{record} must be a JSON object, got {type(data).__name__}")
    missing = [f for f in fields if f not in data]
    extra = sorted(k for k in data if k not in fields)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if extra:
            parts.append(f"unexpected {', '.join(extra)}")
        raise RecordError(f"{record} must have exactly the fields {', '.join(fields)}: {'; '.join(parts)}")


@dataclass(frozen=True)
class TestGate:
    """One side of the two-sided gate: how many of its tests passed."""

    __test__ = False  # not a pytest test class, even when imported into a test module

    total: int
    passed: int

    def __post_init__(self) -> None:
        _require_int("TestGate.total", self.total)
        _require_int("TestGate.passed", self.passed)
        if self.total < 0 or not 0 <= self.passed <= self.total:
            raise RecordError(f"TestGate needs 0 <= passed <= total, got passed={self.passed} total={self.total}")

    @property
    def verdict(self) -> GateVerdict:
        """``satisfied`` only if every test of the gate passed; derived, never stored."""
        return SATISFIED if self.passed == self.total else VIOLATED

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "passed": self.passed, "verdict": self.verdict}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TestGate:
        _exact_keys("TestGate", data, TESTGATE_FIELDS)
        gate = cls(total=data["total"], passed=data["passed"])
        if data["verdict"] != gate.verdict:
            raise RecordError(
                f"TestGate verdict {data['verdict']!r} contradicts its counts "
                f"(passed {gate.passed} of {gate.total} is {gate.verdict!r})"
            )
        return gate


@dataclass(frozen=True)
class Score:
    """The execution verdict for one candidate on one instance (spec 5.1)."""

    instance_id: str
    patch_ref: str
    fail_to_pass: TestGate
    pass_to_pass: TestGate
    graded_by: str
    graded_at: int

    def __post_init__(self) -> None:
        _require_str("Score.instance_id", self.instance_id)
        _require_str("Score.patch_ref", self.patch_ref)
        _require_str("Score.graded_by", self.graded_by)
        _require_int("Score.graded_at", self.graded_at)
        for name in ("fail_to_pass", "pass_to_pass"):
            if not isinstance(getattr(self, name), TestGate):
                raise RecordError(f"Score.{name} must be a TestGate")

    @property
    def resolved(self) -> Resolution:
        """The conjunction of the two gates; derived, never asserted."""
        both = self.fail_to_pass.verdict == SATISFIED and self.pass_to_pass.verdict == SATISFIED
        return RESOLVED if both else NOT_RESOLVED

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "patch_ref": self.patch_ref,
            "resolved": self.resolved,
            "fail_to_pass": self.fail_to_pass.to_dict(),
            "pass_to_pass": self.pass_to_pass.to_dict(),
            "graded_by": self.graded_by,
            "graded_at": self.graded_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Score:
        _exact_keys("Score", data, SCORE_FIELDS)
        score = cls(
            instance_id=data["instance_id"],
            patch_ref=data["patch_ref"],
            fail_to_pass=TestGate.from_dict(data["fail_to_pass"]),
            pass_to_pass=TestGate.from_dict(data["pass_to_pass"]),
            graded_by=data["graded_by"],
            graded_at=data["graded_at"],
        )
        if data["resolved"] != score.resolved:
            raise RecordError(
                f"Score resolved {data['resolved']!r} contradicts its gates (they give {score.resolved!r})"
            )
        return score
