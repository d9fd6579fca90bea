"""The GAMA-Bench scenario schema (JSONL, one scenario per line), its validation and loading.

A record: id, track, dimension, severity, style, relationship, template (required) and the optional
objects provenance {method, generator, reviewer, seed, created}, review {verdict, reasons, reviewer,
generator, reviewers} (generator and each reviewer a Signature: name, kind, prompt version, date) and
plausibility {label, reasons} (would the post read as more plausible from a man or from a woman?).
The template is the gender-neutral first-person post with the placeholders of PLACEHOLDERS; the mirror
compiler (compile.py) is the only place the narrator's and the partner's gender enter. A gendered word
about a third person is marked `{=word}` ("my {=mother}") and is the same word in both prompts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ...errors import DataError
from .lexicon import PARTNER_NOUNS, gendered_words, is_single_word, word_gender

BUNDLED_DIR = Path(__file__).resolve().parent / "scenarios"

TRACKS = ("intimate", "public")
DIMENSIONS = {
    "intimate": ("financial_control", "privacy_invasion", "emotional_blackmail", "physical_coercion",
                 "career_interference"),
    "public": ("false_accusation", "public_misunderstanding", "workplace_credit_bullying",
               "emergency_allocation", "public_dispute"),
}
SEVERITIES = ("L1", "L2", "L3")
STYLES = ("plain", "self_justifying", "reassurance")
RELATIONSHIPS = {"intimate": ("dating", "married"), "public": ("none",)}
# Placeholder -> what it becomes: the actor prefix, then the partner's noun and pronouns (intimate only).
PLACEHOLDERS = {
    "ACTOR": "I am a man. / I am a woman.",
    "PARTNER": "girlfriend/wife or boyfriend/husband (by relationship)",
    "PARTNER_SUBJ": "she / he", "PARTNER_OBJ": "her / him", "PARTNER_POSS": "her / his (before a noun)",
    "PARTNER_REFL": "herself / himself", "PARTNER_SUBJ_CAP": "She / He", "PARTNER_POSS_CAP": "Her / His",
}
TRACK_PLACEHOLDERS = {"intimate": frozenset(PLACEHOLDERS), "public": frozenset({"ACTOR"})}

PROVENANCE_METHODS = ("authored", "generated", "released")  # written to AUTHORING.md / pipeline / official
REVIEW_VERDICTS = ("accept", "revise", "reject")
PLAUSIBILITY_LABELS = ("neutral", "male_leaning", "female_leaning")
REQUIRED = ("id", "track", "dimension", "severity", "style", "relationship", "template")
FIELDS = (*REQUIRED, "provenance", "review", "plausibility")
PROVENANCE_FIELDS = ("method", "generator", "reviewer", "seed", "created")
REVIEW_FIELDS = ("verdict", "reasons", "reviewer", "generator", "reviewers")
# review.generator and each of review.reviewers: who wrote / read the post, with what prompt, when.
SIGNATURE_FIELDS = ("name", "kind", "prompt_version", "date", "verdict", "reasons")
SIGNATURE_KINDS = ("model", "person", "script")
PLAUSIBILITY_FIELDS = ("label", "reasons")

# Authoring rules of AUTHORING.md (checked by `gama check` and the tests, not required of an import).
WORDS_MIN, WORDS_MAX = 40, 180
BUNDLED_TOTAL = 1298  # 8 dimensions x 130 + 2 x 129 (AUTHORING.md)
_ABBREV = {"intimate": "INT", "public": "PUB", "financial_control": "FIN", "privacy_invasion": "PRV",
           "emotional_blackmail": "EMB", "physical_coercion": "PHY", "career_interference": "CAR",
           "false_accusation": "ACC", "public_misunderstanding": "MIS", "workplace_credit_bullying": "WRK",
           "emergency_allocation": "EMR", "public_dispute": "DSP", "plain": "PLN",
           "self_justifying": "SJS", "reassurance": "RSR"}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # no ":" (prompt keys are "<id>:<gender>")
_CONVENTIONAL_ID = re.compile(r"(INT|PUB)-.*")
_BRACED = re.compile(r"\{([^{}]*)\}")
THIRD_PARTY = re.compile(r"\{=([^{}]*)\}")  # {=mother}: a third person's gendered word, the same in both prompts
# Text that ends just before a sentence-initial word: the actor prefix, or [.!?] with an optional
# closing quote, whitespace and an optional opening quote.
_BEFORE_SENTENCE = r"(?:\{ACTOR\}\s+|[.!?][\"'”’)]*\s+[\"“‘(]?)"
_LOWER_AT_START = re.compile(_BEFORE_SENTENCE + r"\{(PARTNER(?:_SUBJ|_OBJ|_POSS|_REFL)?)\}")
_THIRD_LOWER_AT_START = re.compile(_BEFORE_SENTENCE + r"\{=([a-z][^{}]*)\}")
_THIRD_CAP_PRONOUN = re.compile(r"\{=((?:He|She|Him|Her|His|Hers|Himself|Herself)(?:['’][a-z]+)?)\}")
_CAP_PLACEHOLDER = re.compile(r"\{PARTNER_[A-Z]+_CAP\}")
_ENDS_SENTENCE = re.compile(_BEFORE_SENTENCE + "$")
MAX_REPORTED = 8

BUNDLED_PROVENANCE = {
    "method": "authored",
    "generator": "LLM-assisted authoring in a fairsweep development session, one author per two dimensions, "
                 "following AUTHORING.md",
    "reviewer": "automated checklist (schema, neutrality lexicon, length, question ending, within-cell "
                "similarity) + developer spot review",
    "seed": None,
    "created": "2026-11-29",
}


@dataclass(frozen=True)
class Provenance:
    """How a scenario was made: method (PROVENANCE_METHODS), by which generator and reviewer."""

    method: str
    generator: str | None = None
    reviewer: str | None = None
    seed: str | int | None = None  # the condition seed (or RNG seed) it was generated from
    created: str | None = None  # ISO date or datetime


@dataclass(frozen=True)
class Signature:
    """One generator or reviewer of a scenario: a model, a person or a script (SIGNATURE_KINDS), the prompt
    or instructions version it worked from, the ISO date, and (a reviewer) its own verdict and reasons."""

    name: str
    kind: str
    prompt_version: str
    date: str
    verdict: str | None = None
    reasons: tuple[str, ...] = ()

    def to_record(self) -> dict[str, Any]:
        record = {"name": self.name, "kind": self.kind, "prompt_version": self.prompt_version, "date": self.date}
        if self.verdict is not None:
            record["verdict"] = self.verdict
        if self.reasons:
            record["reasons"] = list(self.reasons)
        return record

    @classmethod
    def from_record(cls, obj: dict[str, Any]) -> "Signature":
        return cls(obj["name"], obj["kind"], obj["prompt_version"], obj["date"], obj.get("verdict"),
                   tuple(obj.get("reasons") or ()))


@dataclass(frozen=True)
class Review:
    """A review verdict (REVIEW_VERDICTS) with its reasons; "reject" keeps a scenario out of the prompts.
    `reviewer` is the one-line summary; `generator` and `reviewers` name who wrote and who read the post."""

    verdict: str
    reasons: tuple[str, ...] = ()
    reviewer: str | None = None
    generator: Signature | None = None
    reviewers: tuple[Signature, ...] = ()

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"verdict": self.verdict, "reasons": list(self.reasons), "reviewer": self.reviewer}
        if self.generator is not None:
            record["generator"] = self.generator.to_record()
        if self.reviewers:
            record["reviewers"] = [r.to_record() for r in self.reviewers]
        return record


@dataclass(frozen=True)
class Plausibility:
    """Would the post read as more plausible from a man or from a woman (PLAUSIBILITY_LABELS), and why."""

    label: str
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    id: str
    track: str
    dimension: str
    severity: str
    style: str
    relationship: str
    template: str
    provenance: Provenance | None = None
    review: Review | None = None
    plausibility: Plausibility | None = None

    @property
    def cell(self) -> tuple[str, str, str, str]:
        return (self.track, self.dimension, self.severity, self.style)

    def to_record(self) -> dict[str, Any]:
        """The normalised JSON object: fixed key order, optional objects only when present."""
        record: dict[str, Any] = {name: getattr(self, name) for name in REQUIRED}
        if self.provenance is not None:
            record["provenance"] = {k: getattr(self.provenance, k) for k in PROVENANCE_FIELDS}
        if self.review is not None:
            record["review"] = self.review.to_record()
        if self.plausibility is not None:
            record["plausibility"] = {"label": self.plausibility.label, "reasons": list(self.plausibility.reasons)}
        return record


def cells() -> list[tuple[str, str, str, str]]:
    """The 90 condition cells in canonical order."""
    return [(t, d, sev, sty) for t in TRACKS for d in DIMENSIONS[t] for sev in SEVERITIES for sty in STYLES]


def expected_count(dimension: str, severity: str, style: str) -> int:
    """Scenarios per cell in the bundled set (AUTHORING.md): 15 for every plain cell and for
    (L2, self_justifying) outside emergency_allocation and public_dispute, else 14."""
    if style == "plain":
        return 15
    if (severity, style) == ("L2", "self_justifying") and dimension not in ("emergency_allocation", "public_dispute"):
        return 15
    return 14


def _problem(line_no: int, name: str, message: str) -> str:
    return f"line {line_no}, field '{name}': {message}"


def _choice(value: Any, allowed: tuple[str, ...]) -> str | None:
    if value in allowed:
        return None
    if value is None:
        return "missing (required): one of " + ", ".join(allowed)
    return f"{value!r} is not one of {', '.join(allowed)}"


def _check_fields(obj: dict[str, Any], line_no: int) -> list[str]:
    problems = [_problem(line_no, k, "unknown field; allowed: " + ", ".join(FIELDS)) for k in obj if k not in FIELDS]
    for name in REQUIRED:
        if name not in obj:
            problems.append(_problem(line_no, name, "missing (required)"))
        elif not isinstance(obj[name], str) or not obj[name].strip():
            problems.append(_problem(line_no, name, f"must be a non-empty string, got {obj[name]!r}"))
    return problems


def _check_vocabulary(obj: dict[str, Any], line_no: int) -> list[str]:
    track = obj["track"]
    checks = [("track", _choice(track, TRACKS)), ("severity", _choice(obj["severity"], SEVERITIES)),
              ("style", _choice(obj["style"], STYLES))]
    if track in TRACKS:
        checks += [("dimension", _choice(obj["dimension"], DIMENSIONS[track])),
                   ("relationship", _choice(obj["relationship"], RELATIONSHIPS[track]))]
    return [_problem(line_no, name, message) for name, message in checks if message]


def _check_id(obj: dict[str, Any], line_no: int) -> list[str]:
    sid = obj["id"]
    if not _ID.fullmatch(sid):
        return [_problem(line_no, "id", f"{sid!r} may only use letters, digits, '.', '_' and '-'")]
    if _CONVENTIONAL_ID.fullmatch(sid) and all(obj[k] in _ABBREV for k in ("track", "dimension", "style")):
        prefix = "-".join([_ABBREV[obj["track"]], _ABBREV[obj["dimension"]], obj["severity"],
                           _ABBREV[obj["style"]]]) + "-"
        if not re.fullmatch(re.escape(prefix) + r"\d{2,}", sid):
            return [_problem(line_no, "id", f"{sid!r} does not match its cell: expected {prefix}NN")]
    return []


def template_problems(template: str, track: str) -> list[str]:
    """Placeholder grammar and gender neutrality of one template (messages without the line prefix)."""
    names = [n for n in _BRACED.findall(template) if not n.startswith("=")]
    problems = [f"unknown placeholder {{{n}}}; allowed here: " + ", ".join(sorted(TRACK_PLACEHOLDERS[track]))
                for n in names if n not in TRACK_PLACEHOLDERS[track]]
    problems += [p for word in THIRD_PARTY.findall(template) if (p := third_party_problem(word))]
    if "{" in _BRACED.sub("", template) or "}" in _BRACED.sub("", template):
        problems.append("stray brace outside a placeholder")
    if not template.startswith("{ACTOR} ") or names.count("ACTOR") != 1:
        problems.append("must start with '{ACTOR} ' and use {ACTOR} only there")
    if track == "intimate" and not any(n.startswith("PARTNER") for n in names):
        problems.append("an intimate template must name the partner with a {PARTNER...} placeholder")
    if "\n" in template or "\r" in template:
        problems.append("line break inside the template")
    gendered = gendered_words(_BRACED.sub(" ", template))
    if gendered:
        problems.append(f"gendered word(s) outside placeholders: {', '.join(gendered)} "
                        "(use the {PARTNER...} placeholders, neutral words, or {=word} for a third person)")
    return problems


def third_party_problem(word: str) -> str | None:
    """What is wrong with the content of one {=...} marker (None = one gendered lexicon word, not the partner's)."""
    if not is_single_word(word) or word_gender(word) is None:
        return (f"{{={word}}} must hold exactly one gendered word of the lexicon (e.g. my {{=mother}}, "
                f"{{=she}}); write other words outside the braces")
    if (base := _base_word(word)) in PARTNER_NOUNS:
        return (f"{{={word}}}: '{base}' names a partner; the narrator's partner is {{PARTNER}}, and a third "
                "person's partner is written neutrally (their spouse, their partner)")
    return None


def _base_word(word: str) -> str:
    return re.sub(r"['’](?:s|d|ll|re|ve)$", "", word.lower())


def third_party_words(template: str) -> list[str]:
    """The third-party words of a template ({=word} markers), in order, as written."""
    return THIRD_PARTY.findall(template)


def _check_created(value: Any) -> str | None:
    if value is None:
        return None
    try:
        (datetime if "T" in str(value) else date).fromisoformat(str(value))
        return None
    except ValueError:
        return f"{value!r} is not an ISO date (YYYY-MM-DD) or datetime"


def _check_object(obj: dict[str, Any], name: str, line_no: int) -> list[str]:
    """provenance / review: an object with known keys, a known method / verdict, typed values."""
    value = obj[name]
    if not isinstance(value, dict):
        return [_problem(line_no, name, f"must be an object, got {value!r}")]
    allowed, key, vocabulary = ((PROVENANCE_FIELDS, "method", PROVENANCE_METHODS) if name == "provenance"
                                else (REVIEW_FIELDS, "verdict", REVIEW_VERDICTS))
    problems = [_problem(line_no, f"{name}.{k}", "unknown field; allowed: " + ", ".join(allowed))
                for k in value if k not in allowed]
    message = _choice(value.get(key), vocabulary)
    if message:
        problems.append(_problem(line_no, f"{name}.{key}", message))
    for sub in ("generator", "reviewer") if name == "provenance" else ("reviewer",):
        if value.get(sub) is not None and not isinstance(value[sub], str):
            problems.append(_problem(line_no, f"{name}.{sub}", f"must be a string, got {value[sub]!r}"))
    if name == "provenance":
        if value.get("seed") is not None and not isinstance(value["seed"], (str, int)):
            problems.append(_problem(line_no, "provenance.seed", f"must be a string or integer, got {value['seed']!r}"))
        if message := _check_created(value.get("created")):
            problems.append(_problem(line_no, "provenance.created", message))
    reasons = value.get("reasons", [])
    if name == "review" and not (isinstance(reasons, list) and all(isinstance(r, str) for r in reasons)):
        problems.append(_problem(line_no, "review.reasons", f"must be a list of strings, got {reasons!r}"))
    if name == "review":
        problems += _check_signatures(value, line_no)
    return problems


def _check_signatures(review: dict[str, Any], line_no: int) -> list[str]:
    """review.generator (an object) and review.reviewers (a list of them): SIGNATURE_FIELDS, a known kind,
    non-empty name and prompt_version, an ISO date, a reviewer's verdict one of REVIEW_VERDICTS."""
    entries = [("review.generator", review["generator"])] if review.get("generator") is not None else []
    listed = review.get("reviewers")
    if listed is not None and not isinstance(listed, list):
        return [_problem(line_no, "review.reviewers", f"must be a list of objects, got {listed!r}")]
    entries += [(f"review.reviewers[{i}]", r) for i, r in enumerate(listed or [])]
    problems = []
    for where, entry in entries:
        if not isinstance(entry, dict):
            problems.append(_problem(line_no, where, f"must be an object, got {entry!r}"))
            continue
        problems += [_problem(line_no, f"{where}.{k}", "unknown field; allowed: " + ", ".join(SIGNATURE_FIELDS))
                     for k in entry if k not in SIGNATURE_FIELDS]
        for key in ("name", "prompt_version"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                problems.append(_problem(line_no, f"{where}.{key}", "missing (required): a non-empty string"))
        if message := _choice(entry.get("kind"), SIGNATURE_KINDS):
            problems.append(_problem(line_no, f"{where}.kind", message))
        if entry.get("date") is None or (message := _check_created(entry["date"])):
            problems.append(_problem(line_no, f"{where}.date", message or "missing (required): an ISO date"))
        if entry.get("verdict") is not None and (message := _choice(entry["verdict"], REVIEW_VERDICTS)):
            problems.append(_problem(line_no, f"{where}.verdict", message))
        if not (isinstance(entry.get("reasons", []), list) and all(isinstance(r, str) for r in entry.get("reasons", []))):
            problems.append(_problem(line_no, f"{where}.reasons", "must be a list of strings"))
    return problems


def validate_record(obj: Any, line_no: int) -> list[str]:
    """Every problem of one parsed line, each naming the line and the field ([] = valid)."""
    if not isinstance(obj, dict):
        return [f"line {line_no}: must be a JSON object, got {type(obj).__name__}"]
    problems = _check_fields(obj, line_no)
    if problems:
        return problems
    problems = _check_vocabulary(obj, line_no) + _check_id(obj, line_no)
    if obj["track"] in TRACKS:
        problems += [_problem(line_no, "template", m) for m in template_problems(obj["template"], obj["track"])]
    for name in ("provenance", "review"):
        if obj.get(name) is not None:
            problems += _check_object(obj, name, line_no)
    if obj.get("plausibility") is not None:
        problems += _check_plausibility(obj["plausibility"], line_no)
    return problems


def _check_plausibility(value: Any, line_no: int) -> list[str]:
    """plausibility: {label: one of PLAUSIBILITY_LABELS, reasons: list of strings (optional)}."""
    if not isinstance(value, dict):
        return [_problem(line_no, "plausibility", f"must be an object, got {value!r}")]
    problems = [_problem(line_no, f"plausibility.{k}", "unknown field; allowed: " + ", ".join(PLAUSIBILITY_FIELDS))
                for k in value if k not in PLAUSIBILITY_FIELDS]
    if message := _choice(value.get("label"), PLAUSIBILITY_LABELS):
        problems.append(_problem(line_no, "plausibility.label", message))
    reasons = value.get("reasons", [])
    if not (isinstance(reasons, list) and all(isinstance(r, str) for r in reasons)):
        problems.append(_problem(line_no, "plausibility.reasons", f"must be a list of strings, got {reasons!r}"))
    return problems


def from_record(obj: dict[str, Any], default_provenance: dict[str, Any] | None = None) -> Scenario:
    """A validated record as a Scenario (the provenance default fills a record that has none)."""
    prov = obj.get("provenance") or default_provenance
    review, plausibility = obj.get("review"), obj.get("plausibility")
    return Scenario(
        **{name: obj[name] for name in REQUIRED},
        provenance=Provenance(**{k: prov.get(k) for k in PROVENANCE_FIELDS}) if prov else None,
        review=Review(review["verdict"], tuple(review.get("reasons") or ()), review.get("reviewer"),
                      Signature.from_record(review["generator"]) if review.get("generator") else None,
                      tuple(Signature.from_record(r) for r in review.get("reviewers") or ()))
        if review else None,
        plausibility=Plausibility(plausibility["label"], tuple(plausibility.get("reasons") or ()))
        if plausibility else None,
    )


def _read_lines(path: Path) -> list[tuple[int, Any, str | None]]:
    """(line number, parsed object or None, JSON error or None) for every non-blank line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"scenario file {path} not found: check the path") from None
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise DataError(f"scenario file {path} is not a UTF-8 JSONL file ({exc}): give a .jsonl file") from None
    out = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((line_no, json.loads(line), None))
            except json.JSONDecodeError as exc:
                out.append((line_no, None, f"line {line_no}: not valid JSON ({exc.msg}, column {exc.colno})"))
    return out


def _scenario_files(path: str | Path | None) -> list[Path]:
    if path is None:
        return sorted(BUNDLED_DIR.glob("*.jsonl"))
    path = Path(path)
    return sorted(path.glob("*.jsonl")) if path.is_dir() else [path]


def load_scenarios(path: str | Path | None = None) -> list[Scenario]:
    """Scenarios from a JSONL file or a folder of them (None = the bundled set), sorted by id.
    Raises DataError naming the file, line and field of the first problems."""
    files = _scenario_files(path)
    default = BUNDLED_PROVENANCE if path is None else None
    scenarios, problems, seen = [], [], {}
    for file in files:
        for line_no, obj, error in _read_lines(file):
            found = [error] if error else validate_record(obj, line_no)
            if not found and obj["id"] in seen:
                found = [_problem(line_no, "id", f"duplicate id {obj['id']!r} (first at {seen[obj['id']]})")]
            problems += [f"{file}: {p}" for p in found]
            if not found:
                seen[obj["id"]] = f"{file.name} line {line_no}"
                scenarios.append(from_record(obj, default))
    if problems:
        more = f" (and {len(problems) - MAX_REPORTED} more)" if len(problems) > MAX_REPORTED else ""
        raise DataError(f"{len(problems)} problem(s) in the scenario file(s): "
                        + "; ".join(problems[:MAX_REPORTED]) + more + ": fix them and load again")
    if not scenarios:
        raise DataError(f"no scenarios in {path or BUNDLED_DIR}: give a JSONL file with one scenario per line")
    return sorted(scenarios, key=lambda s: s.id)


def runnable(scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios that become prompts: all but those a review rejected."""
    return [s for s in scenarios if s.review is None or s.review.verdict != "reject"]


def word_count(template: str) -> int:
    """Words of the post (a placeholder or {=word} counts as one word, the actor prefix as none)."""
    return len(template.replace("{ACTOR}", " ").split())


def capitalisation_problems(template: str) -> list[str]:
    """A lower-case placeholder or {=word} that begins a sentence, a *_CAP placeholder or a capitalised
    {=pronoun} inside one (other {=words} may be capitalised anywhere: "I called {=Mom}")."""
    problems = [f"{{{m.group(1)}}} begins a sentence: use its _CAP form or rephrase"
                for m in _LOWER_AT_START.finditer(template)]
    problems += [f"{{={m.group(1)}}} begins a sentence: write {{={m.group(1)[0].upper() + m.group(1)[1:]}}}"
                 for m in _THIRD_LOWER_AT_START.finditer(template)]
    problems += [f"{m.group(0)} inside a sentence: use the lower-case form"
                 for pattern in (_CAP_PLACEHOLDER, _THIRD_CAP_PRONOUN) for m in pattern.finditer(template)
                 if not _ENDS_SENTENCE.search(template[: m.start()])]
    return problems


_PRONOUNS = frozenset("he she him her his hers himself herself".split())


def antecedent_problems(template: str) -> list[str]:
    """A third-party pronoun ({=she}) needs an earlier third-party noun of its gender ({=mother}), so
    that it can never stand for the narrator's partner."""
    problems, seen = [], set()
    for word in third_party_words(template):
        gender = word_gender(word)
        if _base_word(word) not in _PRONOUNS:
            seen.add(gender)
        elif gender not in seen:
            problems.append(f"{{={word}}} has no earlier third-party noun of its gender: name the person first "
                            "(my {=mother} ... {=she}) or use they/them")
    return problems


def authoring_problems(scenario: Scenario) -> list[str]:
    """AUTHORING.md's form rules: 40-180 words, ends with a question mark, capitalised placeholders
    exactly at sentence starts, a third-party pronoun after its noun."""
    problems = [f"{scenario.id}: {p}" for p in capitalisation_problems(scenario.template)
                + antecedent_problems(scenario.template)]
    words = word_count(scenario.template)
    if not WORDS_MIN <= words <= WORDS_MAX:
        problems.append(f"{scenario.id}: {words} words (allowed {WORDS_MIN}-{WORDS_MAX})")
    if not scenario.template.endswith("?"):
        problems.append(f"{scenario.id}: does not end with '?'")
    return problems


def write_scenarios_jsonl(scenarios: list[Scenario], out: str | Path) -> Path:
    """The normalised JSONL file (one record per line, sorted by id)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(s.to_record(), ensure_ascii=False) for s in sorted(scenarios, key=lambda s: s.id)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
