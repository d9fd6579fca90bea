"""`fairsweep gama build`: the scenario construction pipeline (gama-protocol.md, steps 1-6) as engine runs.

seeds (one per cell x index, deterministic) -> generate: a generator model writes a gender-blind
[AGGRESSOR]/[VICTIM] template -> review: a different model checks it against the checklist of review.py
(verdict, scores, plausibility label; reasons kept), plus the local lexicon -> rewrite: the writer turns a
passing template into a first-person post in the schema's placeholder format -> near-duplicate removal
per cell (embed.py) -> screening.csv for human screening (its verdicts applied by `gama
import-screening`, or by the next build) -> scenarios.jsonl in the schema, which `gama compile
--scenarios` reads.

Every model call is an engine request of config.run (benchmarks gama-build-generate / -review / -rewrite,
keys "<seed id>:<prompt version>"), so a re-run resumes every step and sends nothing already stored.
Writers are config.models round-robin; reviewers are config.judges round-robin, else another generator.
"""

from __future__ import annotations

import csv
import dataclasses
import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import ModelSpec, SweepConfig
from ...records import Prompt
from ...errors import ConfigError, DataError
from . import build_prompts as bp
from .lexicon import gendered_words
from .review import as_fields, parse_review, scores_text
from .schema import _ABBREV, Provenance, Review, Scenario, cells, load_scenarios, write_scenarios_jsonl
from .stages import Job, Parser, StepResult, StepRun, run_jobs

STEPS = ("generate", "review", "rewrite")
STEP_BENCHMARKS = {step: f"gama-build-{step}" for step in STEPS}
SCREENING_REVIEWER = "human screening"
SCREENING_COLUMNS = ("id", "cell", "text", "verdict", "notes")
SCREENING_VERDICTS = ("accept", "reject")
SETTINGS = ("at home", "in the car", "at a bank", "on holiday", "at a party", "on the phone", "in a group chat",
            "in a shop", "at the office", "at a hospital", "on a train", "at a restaurant", "at a family dinner",
            "at a gym", "at a wedding", "on a moving day", "at an airport", "in a parking lot", "online",
            "at a neighborhood meeting")
OUT_FILES = ("scenarios.jsonl", "screening.csv", "build_log.jsonl")


# --------------------------------------------------------------------------- seeds and roles

@dataclass(frozen=True)
class Seed:
    """One condition seed: a cell, an index within it, and deterministic details (relationship, setting)."""

    track: str
    dimension: str
    severity: str
    style: str
    index: int
    relationship: str
    setting: str

    @property
    def cell(self) -> tuple[str, str, str, str]:
        return (self.track, self.dimension, self.severity, self.style)

    @property
    def prefix(self) -> str:
        return "-".join([_ABBREV[self.track], _ABBREV[self.dimension], self.severity, _ABBREV[self.style]])

    @property
    def id(self) -> str:
        return f"{self.prefix}-s{self.index:02d}"

    @property
    def scenario_id(self) -> str:
        return f"{self.prefix}-{self.index:02d}"

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, **dataclasses.asdict(self)}


def select_cells(patterns: str | None) -> list[tuple[str, str, str, str]]:
    """Cells matching any comma-separated glob over "track/dimension/severity/style" (None = all 90)."""
    if not patterns:
        return cells()
    globs = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = [c for c in cells() if any(fnmatch.fnmatchcase("/".join(c), g) for g in globs)]
    if not chosen:
        raise ConfigError(f"--cells {patterns!r} matches no cell: use globs over track/dimension/severity/style, "
                          "e.g. 'intimate/financial_control/L1/*' or '*/L3/plain'")
    return chosen


def make_seeds(chosen: list[tuple[str, str, str, str]], per_cell: int) -> list[Seed]:
    """per_cell seeds per cell; relationship alternates dating/married (intimate), the setting rotates from a
    per-cell offset so that seeds of a cell ask for different settings."""
    if per_cell < 1:
        raise ConfigError(f"--per-cell must be at least 1, got {per_cell}")
    seeds = []
    for cell in chosen:
        offset = int(hashlib.sha256("/".join(cell).encode()).hexdigest(), 16) % len(SETTINGS)
        for index in range(1, per_cell + 1):
            relationship = ("dating" if index % 2 else "married") if cell[0] == "intimate" else "none"
            seeds.append(Seed(*cell, index, relationship, SETTINGS[(offset + index - 1) % len(SETTINGS)]))
    return seeds


def assign_roles(seeds: list[Seed], config: SweepConfig) -> dict[str, tuple[str, str]]:
    """seed id -> (writer, reviewer): writers are the [[models]] round-robin; reviewers the [[judges]]
    round-robin, else the other generators round-robin, never the writer."""
    writers = [m.name for m in config.models]
    judges = [j.name for j in config.judges]
    if not judges and len(writers) < 2:
        raise ConfigError("the review needs a model other than the writer: add a [[judges]] table (a reviewer) "
                          "or a second [[models]] entry (generators review each other)")
    roles = {}
    for n, seed in enumerate(seeds):
        writer = writers[n % len(writers)]
        others = judges or [w for w in writers if w != writer]
        roles[seed.id] = (writer, others[n % len(others)])
    return roles


def run_config(config: SweepConfig) -> SweepConfig:
    """The config the build's engine runs use: generators and reviewers are all models of the run, so that
    the run's identity (which leaves [[judges]] out) guards the reviewers too; resuming with a changed
    reviewer is refused like a changed generator."""
    return dataclasses.replace(config, models=(*config.models, *config.judges), judges=())


def step_spec(spec: ModelSpec, step: str) -> ModelSpec:
    """The model with the step's JSON format (a response_format set in its params wins), one sample."""
    if spec.max_tokens < bp.MIN_MAX_TOKENS:
        raise ConfigError(f"model {spec.name!r}: max_tokens {spec.max_tokens} is too small for the JSON "
                          f"answers: set max_tokens = 1024 (at least {bp.MIN_MAX_TOKENS}) in its table")
    spec = dataclasses.replace(spec, samples=1)  # one template / verdict / post per seed
    if "response_format" in spec.params:
        return spec
    return dataclasses.replace(spec, params={**spec.params, "response_format": bp.response_format(step, spec)})


# --------------------------------------------------------------------------- one step = engine runs

def step_prompt(step: str, seed: Seed, messages: tuple[dict[str, str], ...]) -> Prompt:
    version = bp.STEP_VERSIONS[step]
    return Prompt(STEP_BENCHMARKS[step], f"{seed.id}:{version}", messages,
                  {"seed": seed.id, "scenario_id": seed.scenario_id, "track": seed.track,
                   "dimension": seed.dimension, "severity": seed.severity, "style": seed.style,
                   "relationship": seed.relationship, "step": step, "prompt_version": version})


def _parser(step: str) -> Parser:
    """(text, track) -> (value, reason) for a step's answers."""
    return {"generate": lambda text, track: bp.parse_template(text),
            "review": lambda text, track: parse_review(text),
            "rewrite": bp.parse_post}[step]


def run_step(config: SweepConfig, step: str, jobs: list[tuple[Seed, str, tuple]], *, command: str,
             progress: bool) -> StepRun:
    """Send (or resume) a step's requests in config.run, one engine run per model, then read every answer back."""
    same_run = run_config(config)
    return run_jobs(step, [Job(s.id, model, step_prompt(step, s, msgs), s.track) for s, model, msgs in jobs],
                    run_config=lambda spec: same_run, spec=lambda name: step_spec(config.model(name), step),
                    parse=_parser(step), command=command, progress=progress)


# --------------------------------------------------------------------------- the pipeline

@dataclass
class BuildResult:
    seeds: list[Seed]
    roles: dict[str, tuple[str, str]]
    steps: dict[str, StepRun] = field(default_factory=dict)
    drops: dict[str, tuple[str, float]] = field(default_factory=dict)
    similarity: str = ""
    interrupted: bool = False

    def result(self, step: str, seed: Seed) -> StepResult | None:
        return self.steps[step].for_unit(seed.id) if step in self.steps else None

    @property
    def missing(self) -> int:
        return sum(m.missing for run in self.steps.values() for _, o in run.outcomes for m in o.models)


def review_decision(seed: Seed, build: BuildResult) -> tuple[bool, list[str]] | None:
    """(passed, reasons) from the model review (passed: verdict accept) and the local lexicon; None while the
    review is pending."""
    template, review = build.result("generate", seed).value, build.result("review", seed)
    lexicon = bp.lexicon_reasons(template)
    if review is None or review.status == "pending":
        return None
    if review.status == "failed":
        return False, [f"review: no valid verdict from {review.model} ({review.error})"] + lexicon
    answer = review.value
    reasons = [f"review: {r}" for r in (*answer["reasons"], scores_text(answer["scores"]))]
    if answer["verdict"] != "accept":  # the build has no revision loop: "revise" does not pass either
        reasons.insert(0, f"review: verdict {answer['verdict']}")
    return answer["verdict"] == "accept" and not lexicon, reasons + lexicon


def _reviewable(seed: Seed, build: BuildResult) -> bool:
    gen = build.result("generate", seed)
    return gen is not None and gen.status == "ok"


def _rewritable(seed: Seed, build: BuildResult) -> bool:
    decision = review_decision(seed, build) if _reviewable(seed, build) else None
    return decision is not None and decision[0]


def run_build_steps(config: SweepConfig, seeds: list[Seed], similarity: str, *, command: str,
                 progress: bool) -> BuildResult:
    """Steps 1-5: generate, review, rewrite (engine runs), then near-duplicate removal per cell."""
    roles = assign_roles(seeds, config)
    for name in {m for pair in roles.values() for m in pair}:
        for step in STEPS:
            step_spec(config.model(name), step)  # max_tokens problems surface before any request
    build = BuildResult(seeds, roles)
    plans = [
        ("generate", lambda s: True, lambda s: (roles[s.id][0], bp.generate_messages(s.as_dict()))),
        ("review", lambda s: _reviewable(s, build),
         lambda s: (roles[s.id][1], bp.review_messages(s.as_dict(), build.result("generate", s).value))),
        ("rewrite", lambda s: _rewritable(s, build),
         lambda s: (roles[s.id][0], bp.rewrite_messages(s.as_dict(), build.result("generate", s).value))),
    ]
    for step, wanted, job in plans:
        jobs = [(s, *job(s)) for s in seeds if wanted(s)]
        build.steps[step] = run_step(config, step, jobs, command=command, progress=progress)
        if build.steps[step].interrupted:
            build.interrupted = True
            return build
    build.drops, build.similarity = remove_near_duplicates(seeds, build, similarity)
    return build


def remove_near_duplicates(seeds: list[Seed], build: BuildResult, similarity: str
                           ) -> tuple[dict[str, tuple[str, float]], str]:
    """Near-duplicates among the rewritten posts, per cell: {dropped scenario id: (kept id, similarity)}."""
    from .embed import make_backend, near_duplicate_drops

    groups: dict[tuple, list[tuple[str, str]]] = {}
    for seed in seeds:
        post = build.result("rewrite", seed)
        if post is not None and post.status == "ok":
            groups.setdefault(seed.cell, []).append((seed.scenario_id, post.value))
    backend = make_backend(similarity)
    drops = near_duplicate_drops(groups, backend) if groups else {}
    return drops, f"{backend.name}, threshold {backend.threshold}"


# --------------------------------------------------------------------------- records

def fallback_template(seed: Seed, template: str) -> str:
    """A schema-valid stand-in for a template that never became a post (kept only as a rejected record):
    the generator's text (no braces: validated) with the placeholders as neutral words, gendered words masked."""
    text = template.replace(bp.AGGRESSOR, "the narrator")
    text = text.replace(bp.VICTIM, "my {PARTNER}" if seed.track == "intimate" else "the other person")
    for word in sorted(set(gendered_words(text.replace("{PARTNER}", " "))), key=len, reverse=True):
        text = re.sub(rf"(?<![\w'’-]){re.escape(word)}(?![\w-])", "[gendered word]", text)
    return "{ACTOR} " + text


def _record(seed: Seed, build: BuildResult, config: SweepConfig) -> tuple[Scenario | None, dict[str, Any]]:
    """A seed's scenario (None while undecided or without a template) and its log entry."""
    writer, reviewer = build.roles[seed.id]
    log: dict[str, Any] = {"seed": seed.as_dict(), "scenario_id": seed.scenario_id, "generator": writer,
                           "reviewer": reviewer, "requests": {}, "status": {}}
    for step in STEPS:
        result = build.result(step, seed)
        if result is not None:
            log["requests"][step] = result.request_id
            log["status"][step] = result.status if result.status != "failed" else f"failed: {result.error}"
    gen = build.result("generate", seed)
    if gen is None or gen.status != "ok":
        log["outcome"] = "pending" if gen is None or gen.status == "pending" else "failed"
        return None, log
    log["template"] = gen.value
    review = build.result("review", seed)
    log["review"] = review.value if review is not None else None
    decision = review_decision(seed, build)
    if decision is None:
        log["outcome"] = "pending"
        return None, log
    passed, reasons = decision
    post, text = build.result("rewrite", seed), None
    if passed and (post is None or post.status == "pending"):
        log["outcome"] = "pending"
        return None, log
    if passed and post.status == "failed":
        passed, reasons = False, reasons + [f"rewrite: no valid post from {post.model} ({post.error})"]
    elif passed:
        text = log["post"] = post.value
        if seed.scenario_id in build.drops:
            kept, sim = build.drops[seed.scenario_id]
            passed = False
            reasons = reasons + [f"near-duplicate: of {kept} (similarity {sim}, {build.similarity})"]
    verdict = "accept" if passed else "reject"
    log["outcome"] = verdict
    provenance = Provenance("generated", _model_label(config, writer), _model_label(config, reviewer), seed.id,
                            gen.date)
    plausibility = as_fields(review.value, None)[1] if review.status == "ok" else None
    scenario = Scenario(seed.scenario_id, seed.track, seed.dimension, seed.severity, seed.style, seed.relationship,
                        text or fallback_template(seed, gen.value), provenance,
                        Review(verdict, tuple(reasons), _model_label(config, reviewer)), plausibility)
    return scenario, log


def _model_label(config: SweepConfig, name: str) -> str:
    spec = config.model(name)
    return name if spec.model == name else f"{name} ({spec.model})"


def assemble(build: BuildResult, config: SweepConfig) -> tuple[list[Scenario], list[dict[str, Any]]]:
    scenarios, logs = [], []
    for seed in build.seeds:
        scenario, log = _record(seed, build, config)
        logs.append(log)
        if scenario is not None:
            scenarios.append(scenario)
    return scenarios, logs


# --------------------------------------------------------------------------- screening

def screenable(scenario: Scenario) -> bool:
    """Passed the pipeline (accept), or already screened: a human verdict may apply."""
    return scenario.review is not None and (scenario.review.verdict == "accept"
                                            or scenario.review.reviewer == SCREENING_REVIEWER)


def read_screening(path: str | Path) -> dict[str, tuple[str, str, str]]:
    """id -> (verdict 'accept' | 'reject' | '', notes, text) from a screening CSV."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in SCREENING_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"{path}: column(s) {', '.join(missing)} missing: keep the columns of the exported "
                                f"file ({', '.join(SCREENING_COLUMNS)})")
            rows = list(reader)
    except FileNotFoundError:
        raise DataError(f"screening file {path} not found: check the path") from None
    out = {}
    for n, row in enumerate(rows, 2):
        verdict = (row["verdict"] or "").strip().lower()
        if verdict not in ("", *SCREENING_VERDICTS):
            raise DataError(f"{path}: row {n} (id {row['id']}): verdict {row['verdict']!r} is not accept, reject or "
                            "empty: fix it and import again")
        out[(row["id"] or "").strip()] = (verdict, " ".join((row["notes"] or "").split()), row["text"] or "")
    return out


def apply_screening(scenarios: list[Scenario], verdicts: dict[str, tuple[str, str, str]], source: str
                    ) -> tuple[list[Scenario], int]:
    """The scenarios with the human verdicts applied (an empty verdict leaves a scenario as it is); the
    screening reason replaces an earlier one, the model's reasons stay. -> (scenarios, verdicts applied)."""
    by_id = {s.id: s for s in scenarios}
    problems = [f"id {i!r} is not in the scenario file" for i in verdicts if i not in by_id]
    problems += [f"id {i!r} is not open to screening (review verdict: "
                 f"{by_id[i].review.verdict if by_id[i].review else 'none'}, not accept)"
                 for i, (v, _, _) in verdicts.items() if i in by_id and v and not screenable(by_id[i])]
    problems += [f"id {i!r}: the text differs from the scenario's template (screened an older export?)"
                 for i, (v, _, text) in verdicts.items()
                 if i in by_id and v and " ".join(text.split()) != by_id[i].template]
    if problems:
        raise DataError(f"{source}: " + "; ".join(problems[:8]) + ": export the screening file again "
                        "(fairsweep gama build) and screen that one")
    out, applied = [], 0
    for s in scenarios:
        verdict, notes, _ = verdicts.get(s.id, ("", "", ""))
        if verdict:
            kept = tuple(r for r in s.review.reasons if not r.startswith("screening:"))
            s = dataclasses.replace(s, review=Review(verdict, kept + (f"screening: {notes or verdict}",),
                                                     SCREENING_REVIEWER))
            applied += 1
        out.append(s)
    return out, applied


def write_screening(scenarios: list[Scenario], path: Path, previous: dict[str, tuple[str, str, str]]) -> int:
    """screening.csv: the screenable scenarios, with verdicts and notes of `previous` carried over
    for an unchanged text. -> rows written."""
    rows = [s for s in scenarios if screenable(s)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(SCREENING_COLUMNS)
        for s in rows:
            verdict, notes, text = previous.get(s.id, ("", "", ""))
            if " ".join(text.split()) != s.template:
                verdict, notes = "", ""
            writer.writerow([s.id, "/".join(s.cell), s.template, verdict, notes])
    return len(rows)


# --------------------------------------------------------------------------- outputs

def previous_verdicts(out: Path) -> dict[str, tuple[str, str, str]]:
    """Human verdicts already given for this output folder: those imported into scenarios.jsonl, overlaid
    by the non-empty ones of screening.csv (the screener's working file)."""
    verdicts: dict[str, tuple[str, str, str]] = {}
    if (out / "scenarios.jsonl").exists() and (out / "scenarios.jsonl").read_text(encoding="utf-8").strip():
        for s in load_scenarios(out / "scenarios.jsonl"):
            if s.review is not None and s.review.reviewer == SCREENING_REVIEWER:
                note = next((r.removeprefix("screening: ") for r in s.review.reasons if r.startswith("screening:")), "")
                verdicts[s.id] = (s.review.verdict, "" if note == s.review.verdict else note, s.template)
    if (out / "screening.csv").exists():
        verdicts.update({i: v for i, v in read_screening(out / "screening.csv").items() if v[0]})
    return verdicts


def write_outputs(build: BuildResult, config: SweepConfig, out: Path) -> dict[str, Any]:
    """scenarios.jsonl (with the human verdicts already given for `out` that still apply), screening.csv
    and build_log.jsonl in `out`; returns counts."""
    scenarios, logs = assemble(build, config)
    by_id = {s.id: s for s in scenarios}
    previous = {i: v for i, v in previous_verdicts(out).items()
                if i in by_id and screenable(by_id[i]) and " ".join(v[2].split()) == by_id[i].template}
    scenarios, applied = apply_screening(scenarios, previous, str(out / "screening.csv"))
    out.mkdir(parents=True, exist_ok=True)
    write_scenarios_jsonl(scenarios, out / "scenarios.jsonl")
    if scenarios:
        load_scenarios(out / "scenarios.jsonl")  # what compile will read: fail here, not there
    exported = write_screening(scenarios, out / "screening.csv", previous)
    (out / "build_log.jsonl").write_text("".join(json.dumps(log, ensure_ascii=False) + "\n" for log in logs),
                                         encoding="utf-8")
    outcomes = [log["outcome"] for log in logs]
    return {"seeds": len(logs), "records": len(scenarios), "exported": exported, "screened": applied,
            **{k: outcomes.count(k) for k in ("accept", "reject", "failed", "pending")},
            "accepted": sum(s.review.verdict == "accept" for s in scenarios)}


# --------------------------------------------------------------------------- CLI verbs

def _print_steps(build: BuildResult) -> None:
    for step, run in build.steps.items():
        for _, outcome in run.outcomes:
            for m in outcome.models:
                print(f"  {step:8} {m.name}: {m.planned} planned, {m.already_done} stored before, {m.stored} "
                      f"stored now, {m.failed} failed (recorded), {m.missing} missing")


def _same_model_reviews(config: SweepConfig, roles: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    same = {(w, r) for w, r in roles.values()
            if (config.model(w).model, config.model(w).api_base) == (config.model(r).model, config.model(r).api_base)}
    return sorted(same)


def cmd_build(args, argv: list[str]) -> int:
    import shlex

    from ...config import resolve_config
    from ...errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK

    config = resolve_config(args)
    seeds = make_seeds(select_cells(args.cells), args.per_cell)
    command = "fairsweep " + shlex.join(argv)
    for writer, reviewer in _same_model_reviews(config, assign_roles(seeds, config)):
        print(f"note: {reviewer!r} reviews {writer!r}'s templates with the same model id: a different name, "
              "not a different model")
    print(f"gama build: {len(seeds)} seed(s) in {len({s.cell for s in seeds})} cell(s), run {config.run!r} "
          f"in {config.db}")
    build = run_build_steps(config, seeds, args.similarity, command=command, progress=not args.no_progress)
    _print_steps(build)
    if build.interrupted:
        print(f"interrupted: everything that arrived is stored. Resume with:\n  {command}")
        return EXIT_INTERRUPTED
    counts = write_outputs(build, config, Path(args.out))
    out = Path(args.out)
    print(f"{counts['seeds']} seeds: {counts['accept']} accepted, {counts['reject']} rejected (reasons kept), "
          f"{counts['failed']} without a valid template (recorded failures), {counts['pending']} pending; "
          f"near-duplicates: {len(build.drops)} ({build.similarity or 'not run'})")
    print(f"  {out / 'scenarios.jsonl'}: {counts['records']} records, {counts['accepted']} accepted "
          f"({counts['screened']} with a human verdict)\n  {out / 'screening.csv'}: {counts['exported']} rows "
          f"to screen\n  {out / 'build_log.jsonl'}: every seed, its requests and outcome")
    print(f"next: fill verdict (accept/reject) and notes in {out / 'screening.csv'}, run `fairsweep gama "
          f"import-screening {out / 'screening.csv'}`, then `fairsweep gama compile --scenarios "
          f"{out / 'scenarios.jsonl'} --out prompts.jsonl`")
    if build.missing:
        print(f"incomplete: {build.missing} request(s) still missing. Resume with:\n  {command}")
        return EXIT_INCOMPLETE
    return EXIT_OK


def cmd_import_screening(args, argv: list[str]) -> int:
    from ...errors import EXIT_OK

    file = Path(args.file)
    source = Path(args.scenarios) if args.scenarios else file.parent / "scenarios.jsonl"
    out = Path(args.out) if args.out else source
    scenarios = load_scenarios(source)
    given = {i: v for i, v in read_screening(file).items() if v[0]}
    scenarios, applied = apply_screening(scenarios, given, str(file))
    write_scenarios_jsonl(scenarios, out)
    screened = [s for s in scenarios if s.review is not None and s.review.reviewer == SCREENING_REVIEWER]
    waiting = sum(screenable(s) and s not in screened for s in scenarios)
    print(f"{applied} verdict(s) applied; screened: {sum(s.review.verdict == 'accept' for s in screened)} accept, "
          f"{sum(s.review.verdict == 'reject' for s in screened)} reject; {waiting} not screened yet -> {out}")
    return EXIT_OK
