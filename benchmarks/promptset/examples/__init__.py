"""The shipped example prompt set (vignettes.jsonl, written by make_vignettes.py) and its config."""
