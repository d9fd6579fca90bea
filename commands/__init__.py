"""The command line's verbs and what they print: the presentation layer, beside cli.py.

One way to add a verb: a module here with `register(subparsers, add_common_flags)` that adds its parser(s)
and sets `handler=fn(args, argv) -> exit code` on each (`parser.set_defaults(handler=...)`; `raw=True` for a
verb whose arguments are passed through unparsed), listed in VERB_MODULES with its verbs. A module may also define
`ALIASES = {"old-verb": ("new", "words")}`: cli.py rewrites an old name and says the new form. Shared flags
are in flags.py, exit codes in fairsweep.errors. Registering must stay cheap: import heavy modules (rich,
the engine, a benchmark) inside the handlers. `console` and `plan` are what the verbs print.
"""

# Each module and the verbs it registers (a command builds only its own module's parsers: cli.build_parser).
# The order is the order of `fairsweep --help`.
VERB_MODULES = {
    "fairsweep.commands.run": ("run", "plan", "score"),
    "fairsweep.commands.results": ("status", "query", "export", "report"),
    "fairsweep.commands.data": ("data",),  # data fetch | verify | ensure
    "fairsweep.commands.sim_server": ("sim-server",),
    "fairsweep.commands.gama": ("gama",),  # gama ... (scenarios, build, review, judge, validation)
    "fairsweep.commands.batches": ("batches",),  # batches list | cancel
    "fairsweep.commands.bench": ("bench",),  # bench init | check: your own prompt set
    "fairsweep.commands.view": ("view",),  # view: the local web page
}
