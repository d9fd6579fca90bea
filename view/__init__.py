"""`fairsweep view`: a local, token-guarded, read-only web page over a results DB (view/cli.py)."""
