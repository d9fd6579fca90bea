"""`fairsweep gama check`: the content checks of a scenario set, printed one section each.

Each check prints its table or problems and a summary line ending in "-> ok" or "-> FAIL" and returns
(name, passed). For the bundled set (bundled=True) the cell counts must be AUTHORING.md's and every
scenario must carry a review and a plausibility label; for another file those two are reported only.
The formula statistics are descriptive and never fail.
"""

from __future__ import annotations

from collections import Counter

from . import schema
from .clarity import clarity_problems
from .compile import mirror_problems
from .formulas import formula_stats, report_lines
from .lengths import BAND, BUNDLED_MAX_BAND_SHARE, band_share, over_guard, quantiles, track_lengths
from .openers import MAX_SHARE, inversions, opener_shares, over_cap
from .plausibility import RULE
from .plausibility import plausibility as rule_label
from .similarity import SET_THRESHOLD, THRESHOLD, max_similarity_per_cell, set_similarities

MAX_LISTED = 20


def run_checks(scenarios: list[schema.Scenario], bundled: bool) -> list[str]:
    """Run and print every check; returns the names of the failed ones."""
    results = [check_cells(scenarios, bundled), check_neutrality(scenarios), check_clarity(scenarios),
               check_form(scenarios),
               check_review(scenarios, bundled), check_plausibility(scenarios, bundled),
               check_openers(scenarios), check_lengths(scenarios, bundled), check_similarity(scenarios), check_set_similarity(scenarios)]
    print_formulas(scenarios)
    return [name for name, ok in results if not ok]


def _verdict(ok: bool) -> str:
    return " -> ok" if ok else " -> FAIL"


def _listed(problems: list[str]) -> None:
    for p in problems[:MAX_LISTED]:
        print(f"  {p}")
    if len(problems) > MAX_LISTED:
        print(f"  ... and {len(problems) - MAX_LISTED} more")


def check_cells(scenarios, bundled: bool) -> tuple[str, bool]:
    """Counts per cell (rows track/dimension/severity, columns styles); every cell covered, and for the
    bundled set exactly AUTHORING.md's counts and 1,298 in all."""
    counts = Counter(s.cell for s in scenarios)
    print(f"{'track/dimension':42} sev " + " ".join(f"{s:>15}" for s in schema.STYLES) + "  total")
    for track in schema.TRACKS:
        for dim in schema.DIMENSIONS[track]:
            for sev in schema.SEVERITIES:
                row = [counts[(track, dim, sev, sty)] for sty in schema.STYLES]
                print(f"{track + '/' + dim:42} {sev:3} " + " ".join(f"{n:>15}" for n in row) + f"  {sum(row):>5}")
    cells = schema.cells()
    missing = [c for c in cells if counts[c] == 0]
    wrong = [c for c in cells if bundled and counts[c] != schema.expected_count(*c[1:])]
    ok = not missing and not wrong and (not bundled or len(scenarios) == schema.BUNDLED_TOTAL)
    print(f"cells: {len(cells) - len(missing)}/{len(cells)} covered, total {len(scenarios)}"
          + (f"; missing {['/'.join(c) for c in missing]}" if missing else "")
          + (f"; not the AUTHORING.md count: {['/'.join(c) for c in wrong]}" if wrong else "") + _verdict(ok))
    return "cells", ok


def check_neutrality(scenarios) -> tuple[str, bool]:
    """The lexicon on every template outside placeholders and {=word} markers, and the mirror diff of
    every compiled pair."""
    problems = [f"{s.id}: {p}" for s in scenarios for p in schema.template_problems(s.template, s.track)]
    problems += [p for s in scenarios for p in mirror_problems(s)]
    _listed(problems)
    third = [w for s in scenarios for w in schema.third_party_words(s.template)]
    with_third = sum(bool(schema.third_party_words(s.template)) for s in scenarios)
    print(f"neutrality: {len(scenarios)} templates, {len(problems)} problem(s) (lexicon, placeholders, "
          f"mirror diff of {2 * len(scenarios)} prompts); third-party words: {len(third)} in {with_third} "
          f"template(s)" + _verdict(not problems))
    return "neutrality", not problems


def check_clarity(scenarios) -> tuple[str, bool]:
    """Both prompts of every pair rendered: no fixed third-party word that can be read as the partner in
    one prompt only (clarity.py)."""
    problems = [p for s in scenarios for p in clarity_problems(s)]
    _listed(problems)
    flagged = len({p.split(":", 1)[0] for p in problems})
    print(f"mirror clarity: {2 * len(scenarios)} prompts rendered, {len(problems)} flag(s) in {flagged} "
          "template(s) (a fixed third-party word that can be read as the partner in one prompt of a pair only; "
          "the partner's noun said of the narrator; the partner's possessive without a noun)"
          + _verdict(not problems))
    return "mirror clarity", not problems


def check_form(scenarios) -> tuple[str, bool]:
    problems = [p for s in scenarios for p in schema.authoring_problems(s)]
    _listed(problems)
    print(f"form: {schema.WORDS_MIN}-{schema.WORDS_MAX} words, ends with '?', capitalised placeholders and "
          f"{{=words}} at sentence starts, third-party pronouns after their noun: {len(problems)} problem(s)"
          + _verdict(not problems))
    return "form", not problems


def check_review(scenarios, bundled: bool) -> tuple[str, bool]:
    """Review coverage and verdicts; the bundled set must be reviewed throughout."""
    reviewed = [s for s in scenarios if s.review is not None]
    verdicts = Counter(s.review.verdict for s in reviewed)
    reviewers = Counter(s.review.reviewer or "(not named)" for s in reviewed)
    for reviewer, n in reviewers.most_common(MAX_LISTED):
        print(f"  reviewer {reviewer!r}: {n}")
    generators = Counter(s.review.generator.name for s in reviewed if s.review.generator)
    readers = Counter((r.kind, r.name) for s in reviewed for r in s.review.reviewers)
    for name, n in generators.most_common(MAX_LISTED):
        print(f"  generator {name!r}: {n}")
    for (kind, name), n in readers.most_common(MAX_LISTED):
        print(f"  {kind} reviewer {name!r}: {n}")
    unsigned = [s.id for s in reviewed if s.review.generator is None or not s.review.reviewers]
    name, ok = _coverage("review", "reviewed", "without a review", len(reviewed), len(scenarios), bundled,
                         {v: verdicts[v] for v in schema.REVIEW_VERDICTS})
    print(f"review record: {len(reviewed) - len(unsigned)}/{len(reviewed)} name their generator and reviewers; "
          f"{sum(r.kind == 'person' for s in reviewed for r in s.review.reviewers)} human rating(s)"
          + _verdict(not (bundled and unsigned)))
    return name, ok and not (bundled and unsigned)


def check_plausibility(scenarios, bundled: bool) -> tuple[str, bool]:
    """Plausibility label counts, overall and per dimension; the bundled set must be labelled throughout."""
    labelled = [s for s in scenarios if s.plausibility is not None]
    labels = Counter(s.plausibility.label for s in labelled)
    leaning = Counter(s.dimension for s in labelled if s.plausibility.label != "neutral")
    for dimension, n in sorted(leaning.items(), key=lambda kv: (-kv[1], kv[0])):
        by_label = Counter(s.plausibility.label for s in labelled
                           if s.dimension == dimension and s.plausibility.label != "neutral")
        print(f"  {dimension}: " + ", ".join(f"{k} {v}" for k, v in sorted(by_label.items())))
    name, ok = _coverage("plausibility", "labelled", "without a label", len(labelled), len(scenarios), bundled,
                         {label: labels[label] for label in schema.PLAUSIBILITY_LABELS})
    return name, check_rule(scenarios, bundled) and ok


def check_rule(scenarios, bundled: bool) -> bool:
    """The labels against plausibility rule v1 (plausibility.py): the bundled set must equal it."""
    ruled = {s.id: rule_label(s) for s in scenarios}
    counts = Counter(p.label for p in ruled.values())
    differ = [f"{s.id}: label {s.plausibility.label if s.plausibility else 'none'}, rule {ruled[s.id].label} "
              f"({'; '.join(ruled[s.id].reasons[:-1]) or 'no cue'})"
              for s in scenarios if s.plausibility is None or s.plausibility.label != ruled[s.id].label]
    _listed(differ)
    ok = not bundled or not differ
    print(f"{RULE}: " + ", ".join(f"{k} {counts[k]}" for k in schema.PLAUSIBILITY_LABELS)
          + f"; {len(scenarios) - len(differ)}/{len(scenarios)} stored labels equal the rule's" + _verdict(ok))
    return ok


def _coverage(check: str, done_word: str, missing_word: str, done: int, total: int, bundled: bool,
              counts: dict[str, int]) -> tuple[str, bool]:
    """`check: done/total <done_word> (counts)[; n <missing_word>] -> ok|FAIL`; the bundled set needs all."""
    ok = not bundled or done == total
    print(f"{check}: {done}/{total} {done_word} (" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")"
          + (f"; {total - done} {missing_word}" if done < total else "") + _verdict(ok))
    return check, ok


def check_openers(scenarios) -> tuple[str, bool]:
    """Opener patterns (openers.py: the first two units, time and partner phrases normalised) per track,
    none above MAX_SHARE of its track; no stilted fronted openings."""
    for track, counts in opener_shares(scenarios).items():
        total = sum(counts.values())
        if total:
            print(f"  opener patterns {track} ({total} posts, {len(counts)} distinct): " + "; ".join(
                f"{p!r} {n} ({100 * n / total:.1f}%)" for p, n in counts.most_common(5)))
    over = over_cap(scenarios)
    _listed([f"{track}: {p!r} opens {n}/{total} posts ({100 * n / total:.1f}%)" for track, p, n, total in over])
    stilted = inversions(scenarios)
    _listed([f"{sid}: stilted fronted opening: {sentence!r}" for sid, sentence in stilted])
    ok = not over and not stilted
    print(f"openers: no opener pattern above {100 * MAX_SHARE:.0f}% of a track: {len(over)} over; "
          f"stilted fronted openings (openers.INVERSIONS): {len(stilted)}" + _verdict(ok))
    return "openers", ok


def check_lengths(scenarios, bundled: bool) -> tuple[str, bool]:
    """Quantiles of post lengths per track and the share inside lengths.BAND; the bundled set must stay
    at or below lengths.BUNDLED_MAX_BAND_SHARE (another set: reported only)."""
    shares = {}
    for track in schema.TRACKS:
        words = track_lengths(scenarios, track)
        if words:
            shares[track] = band_share(words)
            print(f"  lengths {track} (words): " + ", ".join(f"{k} {v}" for k, v in quantiles(words).items())
                  + f"; {100 * shares[track]:.0f}% within {BAND[0]}-{BAND[1]}")
    over = over_guard(scenarios) if bundled else []
    _listed([f"{track}: {100 * share:.1f}% of posts within {BAND[0]}-{BAND[1]} words, above the bundled set's "
             f"{100 * guard:.0f}%: vary the lengths" for track, share, guard in over])
    guards = ", ".join(f"{t} {100 * g:.0f}%" for t, g in BUNDLED_MAX_BAND_SHARE.items())
    print("length spread: " + ", ".join(f"{t} {100 * v:.1f}%" for t, v in shares.items())
          + f" of posts within {BAND[0]}-{BAND[1]} words" + (f" (bundled set at most {guards})" if bundled else "")
          + _verdict(not over))
    return "lengths", not over


def check_similarity(scenarios) -> tuple[str, bool]:
    """The highest TF-IDF cosine within each cell, against the near-duplicate THRESHOLD."""
    print(f"\nmax within-cell similarity (TF-IDF cosine, threshold {THRESHOLD}):")
    worst = max_similarity_per_cell(scenarios)
    for cell in sorted(worst, key=lambda c: -worst[c][0]):
        sim, a, b = worst[cell]
        flag = "NEAR-DUPLICATE" if sim >= THRESHOLD else ""
        print(f"  {'/'.join(cell):62} {sim:.3f}  {a or '-'} {b or '-'} {flag}")
    over = [c for c, (sim, _, _) in worst.items() if sim >= THRESHOLD]
    top = max((v[0] for v in worst.values()), default=0.0)
    print(f"similarity: highest {top:.3f}, {len(over)} cell(s) at or above {THRESHOLD}" + _verdict(not over))
    return "similarity", not over


def check_set_similarity(scenarios) -> tuple[str, bool]:
    """Every pair of the whole set, across cells too, against SET_THRESHOLD (one idea told twice)."""
    hits, (top, a, b), compared = set_similarities(scenarios)
    cell = {s.id: s.cell for s in scenarios}
    _listed([f"{sim:.3f}  {x} {y} ({'same cell' if cell[x] == cell[y] else 'across cells'}) SAME-IDEA"
             for sim, x, y in hits])
    print(f"set similarity: {compared} pairs of the whole set (TF-IDF cosine, threshold {SET_THRESHOLD}): "
          f"highest {top:.3f} ({a or '-'} {b or '-'}), {len(hits)} pair(s) at or above {SET_THRESHOLD}"
          + _verdict(not hits))
    return "set similarity", not hits


def print_formulas(scenarios) -> None:
    print("\nformula statistics (descriptive):")
    for line in report_lines(formula_stats(scenarios)):
        print(f"  {line}")
