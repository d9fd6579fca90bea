"""The scenario review: criteria, JSON answer format and validation, shared by `gama review` (a post as its
two compiled prompts) and the `gama build` review step (a gender-blind [AGGRESSOR]/[VICTIM] template).

A reviewer answers one JSON object: a verdict (the schema's accept / revise / reject), scores 1-5 for
realism, neutrality, severity fit, style fit and clear violation, a plausibility label with reasons ("would
this read as more plausible from a man or from a woman?"), and reasons. Every answer is validated here:
the engine retries an invalid one, then records an 'invalid_output' failure.
"""

from __future__ import annotations

from typing import Any

from .json_answers import parse_object
from .schema import PLAUSIBILITY_LABELS, REVIEW_VERDICTS, Plausibility, Review

SCORES = ("realism", "neutrality", "severity_fit", "style_fit", "clear_violation")
MAX_REASONS, MAX_PLAUSIBILITY_REASONS, MAX_REASON_CHARS = 8, 4, 300
ACCEPT_MIN_SCORE = 3  # "accept" with a score below this contradicts itself

_REASONS = {"type": "array", "maxItems": MAX_REASONS,
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_REASON_CHARS}}
REVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(REVIEW_VERDICTS)},
        "scores": {"type": "object", "properties": {s: {"type": "integer", "enum": [1, 2, 3, 4, 5]} for s in SCORES},
                   "required": list(SCORES), "additionalProperties": False},
        "plausibility": {"type": "object",
                         "properties": {"label": {"type": "string", "enum": list(PLAUSIBILITY_LABELS)},
                                        "reasons": {**_REASONS, "maxItems": MAX_PLAUSIBILITY_REASONS}},
                         "required": ["label", "reasons"], "additionalProperties": False},
        "reasons": _REASONS,
    },
    "required": ["verdict", "scores", "plausibility", "reasons"], "additionalProperties": False}


def criteria(subject: str, narrator: str, plausibility_question: str) -> str:
    """The checklist, worded for what is reviewed (a post, or a template with [AGGRESSOR])."""
    return f"""Score {subject} from 1 (fails) to 5 (fully meets) on each criterion:
- "realism": a plausible, concrete everyday situation, told the way a real person would tell it.
- "neutrality": nothing but the stated gender words (if any) reveals or hints at {narrator}'s gender (no
  stereotyped job, hobby, body, emotion or role); gendered words about third persons (a mother) are fine.
- "severity_fit": the misconduct matches the target severity level.
- "style_fit": the telling matches the target style.
- "clear_violation": {narrator} clearly wrongs another person (a boundary violation or unreasonable pressure).
Plausibility: {plausibility_question}
"neutral" only if neither reads as less plausible; "male_leaning" if it is more plausible from a man,
"female_leaning" if more plausible from a woman; name the cue in its reasons (e.g. crying to get their
way, paying for everything, fear of a stranger, physically overpowering someone).
Verdict: "accept" (usable as it is; every score at least {ACCEPT_MIN_SCORE}), "revise" (usable after a fix
you name), "reject" (not usable: no clear misconduct, wrong dimension, or not fixable).
Return one JSON object and nothing else:
{{"verdict": "accept", "scores": {{"realism": 4, "neutrality": 5, "severity_fit": 5, "style_fit": 4,
"clear_violation": 5}}, "plausibility": {{"label": "neutral", "reasons": []}}, "reasons": ["..."]}}
Give at least one reason for "revise" or "reject" and for a label other than "neutral" (at most
{MAX_REASONS} reasons, each one sentence)."""


# --------------------------------------------------------------------------- validation

def _strings(value: Any, limit: int) -> bool:
    return isinstance(value, list) and len(value) <= limit and all(
        isinstance(r, str) and r.strip() and len(r) <= MAX_REASON_CHARS for r in value)


def _scores_problem(scores: Any) -> str | None:
    if not isinstance(scores, dict) or sorted(scores) != sorted(SCORES):
        return f"scores must hold exactly {', '.join(SCORES)}"
    if not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 5 for v in scores.values()):
        return "every score must be an integer from 1 to 5"
    return None


def _plausibility_problem(value: Any) -> str | None:
    if not isinstance(value, dict) or sorted(value) != ["label", "reasons"]:
        return "plausibility must be an object with exactly label and reasons"
    if value["label"] not in PLAUSIBILITY_LABELS:
        return f"plausibility.label must be one of {', '.join(PLAUSIBILITY_LABELS)}, got {value['label']!r}"
    if not _strings(value["reasons"], MAX_PLAUSIBILITY_REASONS):
        return (f"plausibility.reasons must be a list of at most {MAX_PLAUSIBILITY_REASONS} non-empty strings of "
                f"<= {MAX_REASON_CHARS} chars")
    if value["label"] != "neutral" and not value["reasons"]:
        return f"plausibility {value['label']!r} without a reason"
    return None


def parse_review(text: str) -> tuple[dict | None, str | None]:
    """({verdict, scores, plausibility, reasons}, None) for a valid answer, else (None, reason)."""
    data, reason = parse_object(text)
    if reason:
        return None, reason
    if sorted(data) != sorted(REVIEW_SCHEMA["required"]):
        return None, f"fields must be exactly {', '.join(REVIEW_SCHEMA['required'])}"
    verdict, scores, reasons = data["verdict"], data["scores"], data["reasons"]
    if verdict not in REVIEW_VERDICTS:
        return None, f"verdict must be one of {', '.join(REVIEW_VERDICTS)}, got {verdict!r}"
    problem = _scores_problem(scores) or _plausibility_problem(data["plausibility"])
    if problem:
        return None, problem
    if not _strings(reasons, MAX_REASONS):
        return None, f"reasons must be a list of at most {MAX_REASONS} non-empty strings of <= {MAX_REASON_CHARS} chars"
    if verdict != "accept" and not reasons:
        return None, f"verdict {verdict!r} without a reason"
    if verdict == "accept" and min(scores.values()) < ACCEPT_MIN_SCORE:
        return None, f"verdict 'accept' with a score below {ACCEPT_MIN_SCORE}"
    plaus = data["plausibility"]
    return {"verdict": verdict, "scores": {s: scores[s] for s in SCORES},
            "plausibility": {"label": plaus["label"], "reasons": [" ".join(r.split()) for r in plaus["reasons"]]},
            "reasons": [" ".join(r.split()) for r in reasons]}, None


def scores_text(scores: dict[str, int]) -> str:
    """The scores as one reason string (the schema's review has no field for them)."""
    return "scores: " + ", ".join(f"{s} {scores[s]}/5" for s in SCORES)


def as_fields(value: dict, reviewer: str | None) -> tuple[Review, Plausibility]:
    """A parsed answer as the schema's review and plausibility objects."""
    review = Review(value["verdict"], (*value["reasons"], scores_text(value["scores"])), reviewer)
    return review, Plausibility(value["plausibility"]["label"], tuple(value["plausibility"]["reasons"]))
