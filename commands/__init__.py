"""The command line's verbs, one module each, and what they print (`console`, `plan`): the presentation
layer. `cli.py` at the package root builds the parser from VERB_MODULES and runs the chosen handler."""
