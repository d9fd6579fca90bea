"""`fairsweep gama screening ...`: the human screening of a scenario set (registered by commands/gama.py;
the first name, `gama-screening`, still works):

  fairsweep gama screening export --out DIR --raters alice,bob [--n 180] [--seed 0]
      a stratified, seeded, gender-blind sample: DIR/<rater>.csv per rater, DIR/key.csv, DIR/INSTRUCTIONS.txt
  fairsweep gama screening import --key DIR/key.csv DIR/alice.csv DIR/bob.csv [--out scenarios.jsonl]
      ratings and verdicts into the DB; Fleiss' kappa, the share rated "either", label vs majority; with --out
      the scenario set with every rater added to the rated scenarios' review records
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

SCENARIOS_HELP = "scenario file in the schema (default: the config's gama_scenarios, else the bundled set)"


def add_screening_verbs(verbs, add_common_flags) -> None:
    """`gama screening export | import` under the `gama` verb's subparsers."""
    screening = verbs.add_parser("screening", help="human screening of the scenarios by two or more raters: "
                                 "export a blinded sample / import the ratings")
    verbs = screening.add_subparsers(dest="screening_command", required=True)
    export = verbs.add_parser("export", help="write a blinded, stratified sample: one CSV per rater and a key file")
    add_common_flags(export)
    export.add_argument("--out", required=True, help="output folder")
    export.add_argument("--raters", required=True, help="comma-separated rater names (at least two)")
    export.add_argument("--n", type=int, default=180, help="items (default 180: two per condition cell)")
    export.add_argument("--seed", type=int, default=0, help="seed of the sample and of each rater's order")
    export.add_argument("--scenarios", help=SCENARIOS_HELP)
    export.set_defaults(handler=cmd_export)
    imp = verbs.add_parser("import", help="read the raters' CSVs: agreement, verdicts into the DB and the reviews")
    add_common_flags(imp)
    imp.add_argument("ratings", nargs="+", help="the filled-in rater CSVs (rater = file name)")
    imp.add_argument("--key", required=True, help="key.csv written by export")
    imp.add_argument("--scenarios", help=SCENARIOS_HELP)
    imp.add_argument("--out", help="write the scenario set with the raters in the review records here")
    imp.set_defaults(handler=cmd_import)


def _scenarios(args, config):
    from ..benchmarks.gama.schema import load_scenarios

    return load_scenarios(args.scenarios or getattr(config, "gama_scenarios", None) or None)


def cmd_export(args: argparse.Namespace, argv: list[str]) -> int:
    from ..config import resolve_config
    from ..errors import EXIT_OK
    from ..benchmarks.gama.screening_kit import export_kit

    config = resolve_config(args)
    screening_id, n = export_kit(_scenarios(args, config), Path(args.out), args.raters.split(","), args.n, args.seed)
    print(f"screening {screening_id}: {n} items for raters {args.raters} in {args.out} (one CSV per rater; "
          f"key.csv maps items to scenarios: keep it away from the raters)")
    return EXIT_OK


def cmd_import(args: argparse.Namespace, argv: list[str]) -> int:
    from ..config import resolve_config
    from ..errors import EXIT_OK
    from ..storage.db import open_db
    from ..benchmarks.gama.schema import write_scenarios_jsonl
    from ..benchmarks.gama.screening_kit import changed_items, evaluate, read_key, read_ratings, store, with_screening

    config = resolve_config(args)
    scenarios = _scenarios(args, config)
    key = read_key(Path(args.key))
    ratings = read_ratings([Path(p) for p in args.ratings], key)
    result = evaluate(key, ratings, {s.id: s.severity for s in scenarios})
    conn = open_db(config.db)
    try:
        store(conn, result, key)
    finally:
        conn.close()
    print_result(result)
    changed = changed_items(key, {s.id: s for s in scenarios})
    if changed:
        print(f"{len(changed)} rated scenario(s) changed since the export (not recorded in the reviews): "
              + ", ".join(changed[:10]))
    if args.out:
        unchanged = {k: v for k, v in result.verdicts.items() if k not in changed}
        result.verdicts = unchanged
        day = datetime.now(timezone.utc).date().isoformat()
        write_scenarios_jsonl(with_screening(scenarios, result, day), args.out)
        print(f"wrote the scenario set with {len(unchanged)} screened review record(s) to {args.out}")
    return EXIT_OK


def print_result(result) -> None:
    def fmt(value):
        return "—" if value is None else f"{value:.3f}"

    print(f"screening {result.screening_id}: {len(result.ratings)} ratings from {len(result.raters)} raters "
          f"({', '.join(result.raters)}) on {len(result.verdicts)} items")
    for question, (items, kappa) in result.kappa.items():
        print(f"  Fleiss' kappa {question}: {fmt(kappa)} over {items} items rated by every rater")
    print(f"  rated 'either' (writer): {100 * result.either_share:.1f}% of ratings")
    print("  plausibility label vs the raters' majority writer:")
    for (label, majority), n in sorted(result.label_vs_majority.items()):
        print(f"    {label:15} -> {majority:12} {n}")
    agree = [v.label_agrees for v in result.verdicts.values() if v.label_agrees is not None]
    if agree:
        print(f"  label agrees with the majority on {sum(agree)}/{len(agree)} items with a majority")
    verdicts = {}
    for v in result.verdicts.values():
        verdicts[v.verdict] = verdicts.get(v.verdict, 0) + 1
    print("  verdicts: " + ", ".join(f"{k} {n}" for k, n in sorted(verdicts.items())))
