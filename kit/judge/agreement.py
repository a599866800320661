"""How far a rubric's judge agrees with people: the figures of a calibration, pure over verdicts.

For each labelled answer the judge gives K verdicts (samples); its verdict is their majority
(`kit.judge.majority`). Per rubric, over its n labelled answers:

    agreement    share of answers where the judge's majority verdict equals the person's
    kappa        Cohen's kappa of the majority verdicts against the people's: (p_o - p_e) / (1 - p_e), where
                 p_o is the agreement and p_e the agreement expected by chance from each side's pass rate.
                 Undefined (None) when p_e = 1: both sides gave one same verdict to every answer, so the
                 labels cannot tell a judge that discriminates from one that always says the same thing.
    consistency  share of answers whose K samples all agree (the judge's own repeatability)

A soft gate's calibration applies while its rubric (hash) and its judge model are the ones calibrated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kit.judge import majority


@dataclass(frozen=True)
class JudgedAnswer:
    """One labelled answer: the person's verdict and the judge's K sample verdicts (pass/fail/error)."""

    key: str
    human: str
    samples: tuple[str, ...]

    @property
    def errored(self) -> bool:
        return "error" in self.samples

    @property
    def verdict(self) -> str:
        return majority(self.samples)

    @property
    def consistent(self) -> bool:
        return len(set(self.samples)) == 1


@dataclass(frozen=True)
class RubricCalibration:
    rubric: str
    n: int
    agreement: float | None
    kappa: float | None
    consistency: float | None
    judge_model: str | None
    rubric_hash: str
    samples: int
    errors: int = 0  # labelled answers the judge failed on (left out of n)
    disagreements: tuple[str, ...] = ()  # keys of the answers where judge and person differ

    def as_json(self) -> dict[str, Any]:
        return {
            "rubric": self.rubric,
            "n": self.n,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "consistency": self.consistency,
            "judge_model": self.judge_model,
            "rubric_hash": self.rubric_hash,
            "samples": self.samples,
            "errors": self.errors,
        }

    def line(self) -> str:
        def fig(x: float | None) -> str:
            return "undefined" if x is None else f"{x:.3f}"

        extra = f", judge failed on {self.errors}" if self.errors else ""
        return (
            f"rubric:{self.rubric}: n {self.n}, agreement {fig(self.agreement)}, kappa {fig(self.kappa)}, "
            f"consistency {fig(self.consistency)} (majority of {self.samples}; judge {self.judge_model}; "
            f"rubric {self.rubric_hash}{extra})"
        )


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (person, judge) verdicts, each pass or fail; None when it is undefined (no pairs,
    or chance agreement 1: both sides gave every answer one same verdict)."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    human_pass = sum(a == "pass" for a, _ in pairs) / n
    judge_pass = sum(b == "pass" for _, b in pairs) / n
    chance = human_pass * judge_pass + (1 - human_pass) * (1 - judge_pass)
    if chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def calibrate(
    rubric: str, answers: Sequence[JudgedAnswer], *, judge_model: str | None, rubric_hash: str, samples: int
) -> RubricCalibration:
    """The figures of one rubric over its judged answers; answers the judge failed on are counted apart."""
    judged = [a for a in answers if not a.errored]
    n = len(judged)
    pairs = [(a.human, a.verdict) for a in judged]
    return RubricCalibration(
        rubric=rubric,
        n=n,
        agreement=sum(h == j for h, j in pairs) / n if n else None,
        kappa=cohen_kappa(pairs),
        consistency=sum(a.consistent for a in judged) / n if n else None,
        judge_model=judge_model,
        rubric_hash=rubric_hash,
        samples=samples,
        errors=len(answers) - n,
        disagreements=tuple(a.key for a in judged if a.human != a.verdict),
    )


def under_floor(results: Sequence[RubricCalibration], min_kappa: float) -> list[str]:
    """What fails the calibration: each rubric whose kappa is under the floor, or undefined."""
    lines = []
    for r in results:
        if r.kappa is None:
            lines.append(
                f"rubric:{r.rubric}: kappa undefined over {r.n} answers (the labels and the judge gave one same "
                f"verdict throughout): label answers of both kinds, soft.min_kappa {min_kappa:.2f} not shown met"
            )
        elif r.kappa < min_kappa:
            lines.append(
                f"rubric:{r.rubric}: kappa {r.kappa:.3f} under soft.min_kappa {min_kappa:.2f} "
                f"(agreement {r.agreement:.3f} over {r.n} answers; disagree on {', '.join(r.disagreements[:5])}"
                + (" ..." if len(r.disagreements) > 5 else "")
                + ")"
            )
    return lines


def calibration_state(judge: Mapping[str, Any] | None, calibration: Mapping[str, Any] | None) -> str:
    """What a soft gate says of its rubric's last calibration: `kappa 0.72, n 30, judge X, 2026-11-30`, or
    `uncalibrated` (with why) when there is none or it measured another rubric version or judge model.
    `judge`: the gate's rubric hash and judge model (`queries.soft_gate_judges`); `calibration`: the
    rubric's latest (`queries.latest_calibrations`)."""
    if calibration is None:
        return "uncalibrated (never: kit calibrate LABELS)"
    when = str(calibration.get("calibrated_at") or "")[:10]
    if judge is not None:
        if judge.get("rubric_hash") and judge["rubric_hash"] != calibration.get("rubric_hash"):
            return f"uncalibrated (the rubric changed since its calibration of {when})"
        if judge.get("judge_model") and judge["judge_model"] != calibration.get("judge_model"):
            return (
                f"uncalibrated (calibrated {when} with judge {calibration.get('judge_model')}, "
                f"judged now by {judge['judge_model']})"
            )
    kappa = calibration.get("kappa")
    shown = "undefined" if kappa is None else f"{kappa:.2f}"
    return f"kappa {shown}, n {calibration.get('n')}, judge {calibration.get('judge_model')}, {when}"
