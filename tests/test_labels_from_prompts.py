"""Labels of committed answers from the prompts the run holds (issue 25): the writer hands each answer's prompt to
the labellers, which then label without reading it back from the DB, and label exactly as from the stored prompt."""

from __future__ import annotations

import datetime as dt

from fairsweep.benchmarks.mrni import labels
from fairsweep.benchmarks.mrni.prompts import build_prompts
from fairsweep.benchmarks.mrni.score import label_unlabelled
from fairsweep.benchmarks.pipeline import labeller, with_prompts
from fairsweep.benchmarks.promptset import labels as set_labels
from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.engine.work import plan_items
from fairsweep.records import AttemptRow, Prompt, ResponseRow
from fairsweep.storage.bulk import insert_rows
from fairsweep.storage.checkpoint import plan_requests, register_run
from fairsweep.storage.db import open_db
from fairsweep.storage.tx import transaction
from fairsweep.storage.writer import RowWriter

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
SPEC = ModelSpec(name="m1", model="sim/m1", api_base="http://127.0.0.1:9/v1")
# answers that exercise the parser's paths: an option named, a description read against the context, an option
# named by its place in the prompt's list, a hedge, a refusal, nothing recognisable, Italian
TEXTS = ("The man.", "The woman, clearly.", "The one who immediately talks about fixing it himself.",
         "It cannot be determined from the information given.", "I won't answer that.", "Banana.",
         "L'uomo.", "Non si può stabilire.", "Person X", "**Answer:** the woman", "The second option.",
         "La prima opzione.", "Option 3")


def _planned(conn, prompts: list[Prompt]):
    register_run(conn, SweepConfig(db="x", run="A", models=(SPEC,)), "test")
    items = plan_items("A", SPEC, prompts)
    plan_requests(conn, items)
    return items


def _answers(conn, items) -> list[ResponseRow]:
    responses = [ResponseRow(i.request_id, f"{i.request_id}-1", TEXTS[n % len(TEXTS)], "stop", 5, 3, None, i.model,
                             None, 10.0, NOW) for n, i in enumerate(items)]
    insert_rows(conn, "attempts", AttemptRow._fields,
                [AttemptRow(r.attempt_id, r.request_id, "s", 1, NOW, 10.0, "ok", None, 200, None, None, 5, 3)
                 for r in responses])
    insert_rows(conn, "responses", ResponseRow._fields, responses)
    return responses


def _labels(conn) -> list[tuple]:
    return conn.execute("SELECT request_id, label, span, parser_version FROM mrni_labels ORDER BY 1").fetchall()


def _label(conn, responses, prompts=None) -> list[tuple]:
    conn.execute("DELETE FROM mrni_labels")
    with transaction(conn):
        labels.label_committed(conn, responses, prompts)
    return _labels(conn)


def test_mrni_labels_from_the_runs_prompts_equal_those_from_the_stored_prompts(db_path, mrni_dir):
    """Every 20th of the 4,704 prompts (both languages, every condition): the labels from the prompts in memory
    are those from the stored prompts, and those scoring gives; with every prompt given, the DB's requests are
    not read (the labels come even with the plan's rows gone)."""
    prompts = list(build_prompts(mrni_dir))[::20]
    assert {p.metadata["language"] for p in prompts} == {"en", "it"} and len({p.metadata["condition"]
                                                                             for p in prompts}) > 2
    conn = open_db(db_path)
    items = _planned(conn, prompts)
    responses = _answers(conn, items)
    given = {i.request_id: i.prompt for i in items}

    from_memory = _label(conn, responses, given)
    from_db = _label(conn, responses)
    conn.execute("DELETE FROM mrni_labels")
    assert label_unlabelled(conn, "A") == (len(items), sum(1 for r in from_db if r[1] == "F"))
    assert len(from_memory) == len(items) and from_memory == from_db == _labels(conn)
    assert len({r[1] for r in from_memory}) >= 4  # several labels, not one parse path

    half = {rid: p for n, (rid, p) in enumerate(given.items()) if n % 2}  # the rest read from the DB
    assert _label(conn, responses, half) == from_db
    conn.execute("DELETE FROM requests")
    assert _label(conn, responses, given) == from_db  # nothing read back
    assert _label(conn, responses) == []  # (the DB path needs the plan)
    conn.close()


def test_an_answer_whose_given_prompt_is_of_another_benchmark_is_not_labelled_as_mrni(db_path, mrni_dir):
    conn = open_db(db_path)
    (item,) = _planned(conn, list(build_prompts(mrni_dir))[:1])
    (response,) = _answers(conn, [item])
    other = Prompt("mine", "q1", ({"role": "user", "content": "Who?"},), {"promptset": {"parser": "choice"}})
    assert _label(conn, [response], {item.request_id: other}) == []
    assert [r[0] for r in _label(conn, [response], {item.request_id: item.prompt})] == [item.request_id]
    conn.close()


def test_prompt_set_labels_from_the_runs_prompts_equal_those_from_the_stored_prompts(db_path):
    """A prompt set's labeller reads the item's spec from the prompt given with the answer, as it is stored."""
    spec = {"parser": "choice", "pattern": None, "field": None, "tolerance": None, "item": "q", "choices":
            ("Alice", "Bob", "Cannot tell"), "answer": 2, "target": None, "groups": ["g=1"], "pair": None,
            "variant": None}
    prompts = [Prompt("mine", f"q{n}", ({"role": "user", "content": f"Who did it? ({n})"},),
                      {"promptset": {**spec, "item": f"q{n}"}, "stratum": "all"}) for n in range(6)]
    conn = open_db(db_path)
    items = _planned(conn, prompts)
    texts = ("Alice.", "B", "It cannot be told: C", "I refuse.", "Bob, I think", "hmm")
    responses = [r._replace(text=t) for r, t in zip(_answers(conn, items), texts)]

    def stored(given):
        conn.execute("DELETE FROM promptset_labels")
        with transaction(conn):
            set_labels.label_committed("mine", conn, responses, given)
        return conn.execute("SELECT * EXCLUDE (scored_at) FROM promptset_labels ORDER BY request_id").fetchall()

    from_db = stored(None)
    assert len(from_db) == 6 and len({r[3] for r in from_db}) >= 4  # kinds: choice, refusal, unparsed
    assert stored({i.request_id: i.prompt for i in items}) == from_db
    conn.close()


def test_the_writer_hands_after_commit_the_prompts_given_with_the_batchs_answers(db_path):
    """Rows added with their prompt reach after_commit with it, per batch (the map holds only the batch's
    answers); an answer added without one is not in it."""
    conn = open_db(db_path)
    seen: list[tuple[list[str], dict]] = []
    writer = RowWriter(conn, flush_rows=1_000, flush_ms=60_000,
                       after_commit=lambda cursor, responses, prompts: seen.append(
                           ([r.request_id for r in responses], dict(prompts))))
    prompt = Prompt("b", "k", ({"role": "user", "content": "hi"},), {})
    for batch in (("r1", "r2"), ("r3",)):
        for rid in batch:
            writer.add(AttemptRow(f"a-{rid}", rid, "s", 1, NOW, 5.0, "ok", None, None, None, None, 3, 2),
                       ResponseRow(rid, f"a-{rid}", "x", "stop", 3, 2, None, "m", None, 5.0, NOW),
                       prompt=None if rid == "r2" else prompt)
        writer.flush()
    writer.close()
    assert seen == [(["r1", "r2"], {"r1": prompt}), (["r3"], {"r3": prompt})]
    conn.close()


def test_a_labeller_without_prompts_is_still_called_with_the_answers_alone():
    """`label(conn, responses)` (a plugin written before the prompts were given) keeps working; one that takes
    `prompts`, or **kwargs, gets them."""
    calls = []
    with_prompts(lambda conn, responses: calls.append(("old", responses)))("c", ["r"], {"r": "p"})
    with_prompts(lambda conn, responses, prompts=None: calls.append(("new", prompts)))("c", ["r"], {"r": "p"})
    with_prompts(lambda conn, responses, **kw: calls.append(("kw", kw)))("c", ["r"], {"r": "p"})
    assert calls == [("old", ["r"]), ("new", {"r": "p"}), ("kw", {"prompts": {"r": "p"}})]
    assert labeller(("mrni-likert",)) is None  # a benchmark without a labeller: no after_commit at all
