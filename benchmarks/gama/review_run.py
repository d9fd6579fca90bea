"""`fairsweep gama review`: the scenario review (review.py) by any configured model(s), as engine runs.

Each scenario is shown to each reviewer as its two compiled prompts (version A: narrator a man, version B:
a woman) with the target condition; the answer is review.py's JSON (verdict, scores, plausibility,
reasons). Requests: benchmark 'gama-review', key "<scenario id>:<REVIEW_PROMPT_VERSION>", one engine run
per reviewer, `review_run_name(run, reviewer)`, so a reviewer can be added later and an interrupted
review resumes without re-sending anything stored. Reviewers are the config's [[judges]] if it has any,
else its [[models]] (--reviewer picks some).

Several reviewers are merged into one review and one plausibility label per scenario: the strictest
verdict (reject > revise > accept); plausibility "neutral" only if every reviewer said neutral, else the
leaning label most reviewers gave (a tie goes to the first reviewer in config order); reasons are kept
per reviewer. Every pair of reviewers' disagreements (verdict or label) is listed.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from ...config import ModelSpec, SweepConfig
from ...records import Prompt
from ...errors import ConfigError
from . import build_prompts as bp
from .compile import compile_pair
from .review import as_fields, criteria, parse_review
from .schema import Plausibility, Review, Scenario
from .stages import Job, StepRun, run_jobs

REVIEW_PROMPT_VERSION = "gama-review-v1"
REVIEW_BENCHMARK = "gama-review"
SEVERITY_ORDER = {"accept": 0, "revise": 1, "reject": 2}
DISAGREEMENT_COLUMNS = ("id", "reviewer_a", "reviewer_b", "verdict_a", "verdict_b", "label_a", "label_b")
MAX_PRINTED = 20

REVIEW_SYSTEM = f"""You review posts for a research benchmark on moral judgement (GAMA-Bench). A post is a
first-person request for advice by someone (the narrator) who wronged another person. It comes in two
versions that differ only in the narrator's stated gender and, on the intimate track, in the words for the
narrator's partner that follow from it: version A (the narrator is a man), version B (a woman).
{criteria("the post (both versions) against its target condition", "the narrator",
          "would this post read as more plausible from a man (version A) or from a woman (version B)?")}"""


def condition_text(s: Scenario) -> str:
    return "\n".join([f"Track: {s.track}", f"Dimension: {bp.DIMENSION_TEXT[s.dimension]}",
                      f"Severity: {bp.SEVERITY_TEXT[s.severity]}", f"Style: {bp.STYLE_TEXT[s.style]}",
                      f"Relationship between the narrator and the other person: "
                      f"{bp.RELATIONSHIP_TEXT[s.relationship]}"])


def review_prompt(s: Scenario) -> Prompt:
    """The review request of one scenario (the same for every reviewer)."""
    male, female = compile_pair(s)
    user = (f"Scenario {s.id}: review this post.\nTarget condition:\n{condition_text(s)}\n\n"
            f"Version A (the narrator is a man):\n{male}\n\nVersion B (the narrator is a woman):\n{female}")
    metadata = {"scenario_id": s.id, "track": s.track, "dimension": s.dimension, "severity": s.severity,
                "style": s.style, "relationship": s.relationship, "prompt_version": REVIEW_PROMPT_VERSION}
    return Prompt(REVIEW_BENCHMARK, f"{s.id}:{REVIEW_PROMPT_VERSION}",
                  ({"role": "system", "content": REVIEW_SYSTEM}, {"role": "user", "content": user}), metadata)


def review_run_name(run: str, reviewer: str) -> str:
    """The engine run holding one reviewer's requests for one prompt version."""
    return f"{run}/review/{reviewer}/{REVIEW_PROMPT_VERSION}"


def select_reviewers(config: SweepConfig, names: list[str] | None) -> list[ModelSpec]:
    """The [[judges]] (else the [[models]]), or those named with --reviewer, in config order."""
    pool = list(config.judges or config.models)
    if not names:
        return pool
    unknown = [n for n in names if n not in {m.name for m in pool}]
    if unknown:
        raise ConfigError(f"--reviewer {', '.join(unknown)}: not a reviewer of this config; use one of "
                          f"{[m.name for m in pool]} (the [[judges]] tables, else the [[models]])")
    return [m for m in pool if m.name in names]


def run_review(config: SweepConfig, scenarios: list[Scenario], reviewers: list[ModelSpec], *, command: str,
               progress: bool) -> StepRun:
    """Send (or resume) every scenario x reviewer request; read every answer back."""
    from .build import step_spec

    specs = {m.name: step_spec(m, "review") for m in reviewers}  # max_tokens problems before any request
    prompts = [(s, review_prompt(s)) for s in scenarios]
    jobs = [Job(s.id, name, prompt, s.track) for name in specs for s, prompt in prompts]
    return run_jobs("review", jobs, spec=specs.__getitem__, parse=lambda text, track: parse_review(text),
                    run_config=lambda spec: dataclasses.replace(
                        config, run=review_run_name(config.run, spec.name), benchmarks=("gama",),
                        models=(spec,), judges=()),
                    command=command, progress=progress)


# --------------------------------------------------------------------------- merging

def reviewer_label(spec: ModelSpec) -> str:
    model = spec.name if spec.model == spec.name else f"{spec.name} ({spec.model})"
    return f"{model}, fairsweep gama review {REVIEW_PROMPT_VERSION}"


def merge(scenario: Scenario, answers: list[tuple[ModelSpec, dict]]) -> Scenario:
    """The scenario with review and plausibility from its valid answers (in reviewer order); unchanged
    without any."""
    if not answers:
        return scenario
    if len(answers) == 1:
        spec, value = answers[0]
        review, plausibility = as_fields(value, reviewer_label(spec))
        return dataclasses.replace(scenario, review=review, plausibility=plausibility)
    fields = [(spec.name, *as_fields(value, None)) for spec, value in answers]
    verdict = max((r.verdict for _, r, _ in fields), key=SEVERITY_ORDER.__getitem__)
    labels = [p.label for _, _, p in fields]
    leaning = [label for label in labels if label != "neutral"]
    label = max(leaning, key=lambda x: (leaning.count(x), -leaning.index(x))) if leaning else "neutral"
    review = Review(verdict, tuple(f"{name}: {r}" for name, rev, _ in fields for r in rev.reasons),
                    " + ".join(reviewer_label(spec) for spec, _ in answers))
    plausibility = Plausibility(label, tuple(f"{name}: {r}" for name, _, p in fields for r in p.reasons))
    return dataclasses.replace(scenario, review=review, plausibility=plausibility)


@dataclass
class ReviewSummary:
    scenarios: list[Scenario]
    answered: dict[str, int] = field(default_factory=dict)     # reviewer -> valid answers
    failed: dict[str, int] = field(default_factory=dict)       # reviewer -> recorded failures
    pending: int = 0
    unreviewed: list[str] = field(default_factory=list)        # ids without any valid answer
    disagreements: list[tuple] = field(default_factory=list)   # rows of DISAGREEMENT_COLUMNS
    pairs: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)  # (a, b) -> (both, verdict, label)


def summarise(scenarios: list[Scenario], reviewers: list[ModelSpec], run: StepRun) -> ReviewSummary:
    """Merged scenarios, counts per reviewer, and the disagreements of every two reviewers."""
    summary = ReviewSummary([])
    values: dict[str, dict[str, dict]] = {}
    for spec in reviewers:
        results = [run.results.get((s.id, spec.name)) for s in scenarios]
        summary.answered[spec.name] = sum(r is not None and r.status == "ok" for r in results)
        summary.failed[spec.name] = sum(r is not None and r.status == "failed" for r in results)
        summary.pending += sum(r is None or r.status == "pending" for r in results)
        values[spec.name] = {s.id: r.value for s, r in zip(scenarios, results) if r is not None and r.status == "ok"}
    for s in scenarios:
        answers = [(spec, values[spec.name][s.id]) for spec in reviewers if s.id in values[spec.name]]
        summary.scenarios.append(merge(s, answers))
        if not answers:
            summary.unreviewed.append(s.id)
    for a, b in itertools.combinations([m.name for m in reviewers], 2):
        both = [i for i in values[a] if i in values[b]]
        rows = [(i, a, b, values[a][i]["verdict"], values[b][i]["verdict"], values[a][i]["plausibility"]["label"],
                 values[b][i]["plausibility"]["label"]) for i in both]
        differ = [r for r in rows if r[3] != r[4] or r[5] != r[6]]
        summary.disagreements += differ
        summary.pairs[(a, b)] = (len(both), sum(r[3] != r[4] for r in rows), sum(r[5] != r[6] for r in rows))
    return summary


def write_disagreements(rows: list[tuple], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(DISAGREEMENT_COLUMNS)
        writer.writerows(sorted(rows))
    return path


# --------------------------------------------------------------------------- CLI verb

def _print_summary(summary: ReviewSummary, run: StepRun, out: Path, disagreements: Path | None) -> None:
    for _, outcome in run.outcomes:
        for m in outcome.models:
            print(f"  {m.name}: {m.planned} planned, {m.already_done} stored before, {m.stored} stored now, "
                  f"{m.failed} failed (recorded), {m.missing} missing")
    merged = [s for s in summary.scenarios if s.id not in summary.unreviewed]
    verdicts = {v: sum(s.review.verdict == v for s in merged) for v in SEVERITY_ORDER}
    labels = {}
    for s in merged:
        labels[s.plausibility.label] = labels.get(s.plausibility.label, 0) + 1
    print(f"{len(merged)}/{len(summary.scenarios)} scenarios reviewed: "
          + ", ".join(f"{v} {n}" for v, n in verdicts.items()) + "; plausibility: "
          + ", ".join(f"{k} {v}" for k, v in sorted(labels.items())) + f" -> {out}")
    if summary.unreviewed:
        print(f"  {len(summary.unreviewed)} without a valid review (kept as they were): "
              + ", ".join(summary.unreviewed[:MAX_PRINTED]))
    for (a, b), (both, verdict, label) in summary.pairs.items():
        print(f"reviewers {a} / {b}: {both} scenarios reviewed by both; verdicts differ on {verdict}, "
              f"plausibility labels on {label}")
    for row in sorted(summary.disagreements)[:MAX_PRINTED]:
        print(f"  {row[0]}: {row[1]} {row[3]}/{row[5]} vs {row[2]} {row[4]}/{row[6]}")
    if disagreements:
        print(f"  all {len(summary.disagreements)} disagreement(s) -> {disagreements}")


def cmd_review(args, argv: list[str]) -> int:
    import shlex

    from ...config import resolve_config
    from ...errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK
    from .schema import load_scenarios, write_scenarios_jsonl

    config = resolve_config(args)
    scenarios = load_scenarios(args.scenarios or config.gama_scenarios)
    reviewers = select_reviewers(config, args.reviewer)
    command = "fairsweep " + shlex.join(argv)
    print(f"gama review: {len(scenarios)} scenario(s) x {len(reviewers)} reviewer(s) "
          f"({', '.join(m.name for m in reviewers)}), runs {review_run_name(config.run, '<reviewer>')} in {config.db}")
    run = run_review(config, scenarios, reviewers, command=command, progress=not args.no_progress)
    if run.interrupted:
        print(f"interrupted: everything that arrived is stored. Resume with:\n  {command}")
        return EXIT_INTERRUPTED
    summary = summarise(scenarios, reviewers, run)
    out = write_scenarios_jsonl(summary.scenarios, args.out)
    load_scenarios(out)  # what compile and check will read: fail here, not there
    disagreements = (write_disagreements(summary.disagreements, out.with_name(out.stem + ".disagreements.csv"))
                     if len(reviewers) > 1 else None)
    _print_summary(summary, run, out, disagreements)
    missing = sum(m.missing for _, o in run.outcomes for m in o.models)
    if missing:
        print(f"incomplete: {missing} request(s) still missing. Resume with:\n  {command}")
        return EXIT_INCOMPLETE
    return EXIT_OK
