"""CPU per parse of the MRNI-BB answer parser, an older version and the current one side by side in one run.

    FAIRSWEEP_MRNI_DIR=/work/shared/data/mrni-bb python bench/mrni_parser_speed.py --before REV|DIR
        [--rounds 5] [--check]

--before: a git revision (its benchmarks/mrni/parse.py, describe.py and fold.py, read with `git show`, as
bench/mrni_parser_accuracy.py does) or a directory holding copies of those files (fold.py optional).
Inputs, each with its prompt's language, condition, context and option texts as benchmarks/mrni/labels.py passes
them:
  sim, cold   one simulated-server answer (sim/state.py: sentence()) per MRNI-BB prompt, 4,704, with the
              parser's caches emptied first: every prompt is new, as in a run's first model
  sim, warm   another answer per prompt right after, caches kept: the later models of a run
  corpus      the labelled answers of tests/data/mrni_parser (tests/parser_corpus.py), caches emptied first
CPU time (time.process_time) per parse, median and min-max over --rounds rounds; within a round each pass is run
by the two parsers one after the other (who goes first alternates), and the ratio before / after is taken per
round. The machine may be shared: read the ratios, not the times.

--check: first compare the two parsers' results (label, span, version) on the inputs above and on
stress_inputs() (the corpus and the parser tests' answers with other prompts' contexts and options, names
and option texts swapped in, upper case, bullet lists, echoes of the prompt and question, Italian wordings,
think blocks, descriptions and ordinals, truncations, word salads of the parser's vocabulary); exit 1 on any
difference.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import parser_corpus as pc  # noqa: E402
from fairsweep.benchmarks.mrni import describe, parse  # noqa: E402
from fairsweep.benchmarks.sampling import load_prompts  # noqa: E402
from fairsweep.config import SweepConfig  # noqa: E402
from fairsweep.sim.state import sentence  # noqa: E402


class Call(NamedTuple):
    """One parse_answer call."""

    text: object  # str, or an odd value the parser must survive
    language: str
    condition: str
    context: str | None = None
    options: tuple[str, ...] | None = None


class PromptInfo(NamedTuple):
    key: str
    language: str
    condition: str
    context: str | None
    options: tuple[str, ...] | None
    question: str
    message: str
    gold: str


class Parser(NamedTuple):
    name: str
    parse_answer: Callable
    modules: tuple[types.ModuleType, ...]  # whose lru_caches are emptied for a cold pass


# ----------------------------------------------------------------------------- parsers


def parser_from(source: str) -> Parser:
    """The parser of a directory (parse.py, describe.py, optional fold.py) or of a git revision, loaded as a
    package of its own (the files import only the stdlib and each other; a missing fold.py is the current one)."""
    directory = Path(source)
    package = types.ModuleType("mrni_parser_" + re.sub(r"\W", "_", source))
    package.__path__ = []
    sys.modules[package.__name__] = package
    modules = []
    for name in ("fold", "describe", "parse"):
        if directory.is_dir():
            path = directory / f"{name}.py"
            code = path.read_text(encoding="utf-8") if path.exists() else None
        else:
            shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{source}:benchmarks/mrni/{name}.py"],
                                   capture_output=True, text=True)
            code = shown.stdout if shown.returncode == 0 else None
        if code is None:
            if name == "parse":
                raise SystemExit(f"bench: no parse.py in {source!r} (a directory, or a git revision of this repo)")
            module = sys.modules[f"fairsweep.benchmarks.mrni.{name}"]
        else:
            module = types.ModuleType(f"{package.__name__}.{name}")
            module.__package__ = package.__name__
            sys.modules[module.__name__] = module  # dataclasses look their module up
            exec(compile(code, f"{source}/{name}.py", "exec"), module.__dict__)
            modules.append(module)
        setattr(package, name, module)
    return Parser(f"{package.parse.PARSER_VERSION} ({source})", package.parse.parse_answer, tuple(modules))


CURRENT = Parser(f"{parse.PARSER_VERSION} (work tree)", parse.parse_answer, (parse, describe))


def clear_caches(parser: Parser) -> None:
    """Empty every functools cache of the parser's modules: the next answers are a new prompt's."""
    for module in parser.modules:
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


# ------------------------------------------------------------------------------ inputs


def prompts(mrni_dir: str) -> list[PromptInfo]:
    """The MRNI-BB prompts with the fields the labeller passes (context; options split on "|", stripped)."""
    out = []
    for p in load_prompts(SweepConfig(), mrni_dir):
        m = p.metadata
        options = tuple(o.strip() for o in m["answer_options"].split("|")) if m.get("answer_options") else None
        out.append(PromptInfo(p.key, m["language"], m["condition"], m.get("context"), options,
                              m.get("question") or "", p.messages[-1]["content"], m.get("gold_answer") or ""))
    return out


def call_for(text: object, p: PromptInfo) -> Call:
    return Call(text, p.language, p.condition, p.context, p.options)


def sim_calls(ps: list[PromptInfo], seed: int) -> list[Call]:
    """One simulated-server answer per prompt (a seeded sentence naming nobody)."""
    return [call_for(sentence(random.Random(f"{seed}:{p.key}")), p) for p in ps]


def corpus_calls() -> list[Call]:
    return [Call(c.text, c.language, c.condition, c.context, c.options) for c in pc.load_all()]


_SWAPS_EN = [("the man", "the woman"), ("The man", "Person Y"), ("the woman", "person x"), ("Person X", "the man"),
             ("Person Y", "The woman"), ("insufficient information", "Insufficient Information"),
             ("woman", "man"), ("man", "woman")]
_TO_ITALIAN = [("The man", "L'uomo"), ("the man", "l'uomo"), ("The woman", "La donna"), ("the woman", "la donna"),
               ("Person X", "La persona X"), ("Person Y", "la persona Y"),
               ("insufficient information", "informazioni insufficienti"), ("Insufficient information",
                                                                            "Informazioni insufficienti"),
               ("because", "perché"), (" is ", " è "), ("cannot be determined", "non si può stabilire"),
               ("I won't", "Non posso"), ("neither", "né l'uomo né la donna"), ("both", "entrambi"),
               ("Answer:", "Risposta:"), ("the one who", "quella che"), ("Therefore", "Quindi")]
_PIECES = ["The man.", "The woman.", "Person X", "person y", "Insufficient information.", "I won't answer.",
           "Answer: ", "Final answer:", "However, the context does not say who.", "It's not the man,",
           "the one who lists the tools", "the former", "the latter", "the second option", "option 3",
           "Both.", "Neither of them.", "\n- the man\n- the woman\n", "**", "<think>the man?</think>", "<think>",
           "</think>", "Probably", "One might say the man, but", "Therefore, ", "Quindi ", "la donna", "l'uomo",
           "nessuno dei due", "Non lo so.", "Risposta: ", "who is more likely to believe that men should lead?",
           "chi è più propenso a credere che", "that the woman should", "because the man", "X", "Y", "È",
           "non è possibile stabilirlo", "Context: a man and a woman.", "Question: who?", "1. the man\n",
           "I'd pick the woman", "rather than the man", "the man's partner", "a man", "Sarebbe l'uomo.", "?", ";"]


def _swap(text: str, pairs: list[tuple[str, str]], rng: random.Random) -> str:
    for a, b in rng.sample(pairs, k=min(len(pairs), rng.randint(1, 4))):
        text = text.replace(a, b)
    return text


def _context_phrases(context: str | None) -> list[str]:
    """Clauses of a context, as an answer quoting a person's role would take them."""
    if not context:
        return []
    return [c.strip() for c in re.split(r"[.;,]", context) if len(c.split()) >= 3]


def stress_inputs(ps: list[PromptInfo], seed: int = 7) -> Iterable[Call]:
    """Answers built to reach every branch of the parser, each with a prompt's language, condition, context
    and options (random draws from a fixed seed, so every run checks the same inputs)."""
    rng = random.Random(seed)
    corpus = pc.load_all()
    import test_mrni_parser as tp  # the parser tests' answers and prompts

    answers = [c.text for c in corpus] + [t for t, *_ in tp.ALL_CASES] + tp.WOMAN_EN + tp.WOMAN_IT
    vocabulary = sorted({w for a in answers for w in re.findall(r"[\w'’]+|[^\w\s]", a)})
    by_lang = {lang: [p for p in ps if p.language == lang] for lang in ("en", "it")}
    for case in corpus:  # the corpus under other prompts, with and without their texts
        for p in rng.sample(by_lang[case.language], 4) + rng.sample(ps, 2):
            yield call_for(case.text, p)
        yield Call(case.text, case.language, case.condition)
        yield Call(case.text, case.language, case.condition, case.context)
        yield Call(case.text, case.language, case.condition, None, case.options)
    for text, lang, cond, _ in tp.ALL_CASES:
        yield Call(text, lang, cond)
        yield call_for(text, rng.choice(by_lang[lang]))
        yield Call(tp.EN_PROMPT_GS + "\n\n" + text, lang, cond)
        yield Call(tp.IT_PROMPT_GS + "\nRisposta: " + text, lang, cond)
    for p in ps:  # the prompt echoed, alone and with its gold answer, and its question restated
        yield call_for(p.message, p)
        yield call_for(p.message + "\n\nAnswer: " + p.gold, p)
        yield call_for(p.question + " " + rng.choice(answers), p)
    for _ in range(12000):
        p, text = rng.choice(ps), rng.choice(answers)
        kind = rng.randrange(14)
        if kind == 0:
            text = _swap(text, _SWAPS_EN, rng)
        elif kind == 1 and p.options:
            text = text.replace(rng.choice(["the man", "the woman", "Person X", "insufficient information"]),
                                rng.choice(p.options))
        elif kind == 2:
            text = text.upper()
        elif kind == 3 and p.options:
            bullet = rng.choice(["- ", "* ", "1. ", "", "• ", "a) ", "Option A: "])
            text = "\n".join(bullet + o for o in rng.sample(p.options, len(p.options))) + "\n\n" + text
        elif kind == 4:
            text = rng.choice([p.message + "\n", "Question: " + p.question + "\n", p.question + " "]) + text
        elif kind == 5:
            text = _swap(text, _TO_ITALIAN, rng)
        elif kind == 6 and _context_phrases(p.context):
            phrase = rng.choice(_context_phrases(p.context)).lower()
            head = rng.choice(["The one who ", "Probably the person who ", "Quella che ", "Not the one who ",
                               "I'd say the one that ", "Chi ", "The answer is the individual who "])
            text = head + " ".join(phrase.split()[1:]) + rng.choice([".", ", because ", "", "?"]) + \
                rng.choice(["", text])
        elif kind == 7:
            text = rng.choice(["The former.", "The latter", "La seconda opzione.", "The third option.",
                               "Option 2", "l'opzione b", "the first person mentioned", "Il primo citato"]) + \
                rng.choice(["", " " + text])
        elif kind == 8:
            text = rng.choice(["<think>", "<thinking>x</thinking>", "</think>", "<reasoning>"]) + text
        elif kind == 9:
            text = text[:rng.randrange(len(text) + 1)]
        elif kind == 10:
            text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 40)))
        elif kind == 11:
            text = "".join(rng.choice(_PIECES) + rng.choice([" ", "", "\n", ". "]) for _ in range(rng.randint(1, 6)))
        elif kind == 12:
            text = text + rng.choice([" ", "\n", " However, ", " But "]) + rng.choice(answers)
        else:
            text = text.replace("'", "\u2019").replace('"', "\u201c") + rng.choice(["", "\u00a0", "\t", "\r\n"])
        yield call_for(text, p)
    for p in ps[:50]:  # odd calls: the errors and the empty answers must be the same too
        yield Call("The man.", p.language.upper(), p.condition, p.context, p.options)
        yield Call("  \n", p.language, p.condition, p.context, p.options)
        yield Call(None, p.language, p.condition)
    yield Call("The man.", "fr", "ambiguous_gs")
    yield Call("The man.", "en", "ambiguous")


# ----------------------------------------------------------------------- equivalence


def outcome(parser: Parser, call: Call) -> tuple:
    """(label, span, version) of a parse, or the error it raised."""
    try:
        result = parser.parse_answer(*call)
    except Exception as exc:  # noqa: BLE001 - an error is an outcome to compare
        return ("error", type(exc).__name__, str(exc))
    return (result.label, result.span, result.version)


def differences(before: Parser, after: Parser, calls: Iterable[Call]) -> tuple[int, list[tuple[Call, tuple, tuple]]]:
    """(inputs compared, [(call, before's outcome, after's outcome)] where they differ)."""
    n, diff = 0, []
    for call in calls:
        n += 1
        old, new = outcome(before, call), outcome(after, call)
        if old != new:
            diff.append((call, old, new))
    return n, diff


# ------------------------------------------------------------------------------ timing


def cpu_per_parse(parser: Parser, calls: list[Call]) -> float:
    """CPU seconds per parse over one pass."""
    parse_answer = parser.parse_answer
    gc.collect()
    start = time.process_time()
    for call in calls:
        parse_answer(*call)
    return (time.process_time() - start) / len(calls)


def one_round(parsers: tuple[Parser, ...], passes: list[tuple[str, bool, list[Call]]]) -> dict[tuple[str, str], float]:
    """(parser, input) -> CPU per parse: each pass run by every parser in turn (so a change in the machine's
    load falls on both), the parser's caches emptied first for a cold pass."""
    times = {}
    for kind, cold, calls in passes:
        for parser in parsers:
            if cold:
                clear_caches(parser)
            times[parser.name, kind] = cpu_per_parse(parser, calls)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, metavar="REV|DIR", help="the parser to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="compare the two parsers' results first")
    args = ap.parse_args()
    mrni_dir = os.environ.get("FAIRSWEEP_MRNI_DIR")
    if not mrni_dir or not Path(mrni_dir).is_dir():
        print("bench: set FAIRSWEEP_MRNI_DIR to the MRNI-BB data directory", file=sys.stderr)
        return 2
    before, after = parser_from(args.before), CURRENT
    ps = prompts(mrni_dir)
    sim_cold, sim_warm, corpus = sim_calls(ps, 1), sim_calls(ps, 2), corpus_calls()
    if args.check:
        n, diff = differences(before, after, [*sim_cold, *sim_warm, *corpus, *stress_inputs(ps)])
        print(f"equivalence: {n} inputs, {len(diff)} differences")
        for call, old, new in diff[:20]:
            print(f"  {call!r}\n    before {old!r}\n    after  {new!r}")
        if diff:
            return 1
    passes = [("sim, cold", True, sim_cold), ("sim, warm", False, sim_warm), ("corpus", True, corpus)]
    rounds = [one_round((before, after) if i % 2 == 0 else (after, before), passes) for i in range(args.rounds)]
    print(f"CPU per parse (us), median [min-max] of {args.rounds} rounds; inputs: sim {len(sim_cold)} answers "
          f"per pass (one per prompt), corpus {len(corpus)}; ratio: before / after, median [min-max] over the rounds")
    print(f"{'':10} {before.name:>34} {after.name:>34} {'ratio':>18}")
    for kind, _, _ in passes:
        cells = []
        for name in (before.name, after.name):
            values = [r[name, kind] * 1e6 for r in rounds]
            cells.append(f"{statistics.median(values):9.1f} [{min(values):7.1f}-{max(values):7.1f}]")
        ratios = [r[before.name, kind] / r[after.name, kind] for r in rounds]
        ratio = f"{statistics.median(ratios):5.1f}x [{min(ratios):.1f}-{max(ratios):.1f}]"
        print(f"{kind:10} {cells[0]:>34} {cells[1]:>34} {ratio:>18}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
