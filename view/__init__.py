"""`fairsweep view`: a local, token-guarded, read-only web page over a results DB (the verb: commands/view.py)."""
