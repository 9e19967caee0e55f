"""Chaos for LWS: faults (actions), steady-state probes and an in-process runner.

`actions` and `probes` are a chaostoolkit extension: experiments in `chaos/*.yaml` name them as
`python` providers and run standalone with `chaos run`. Every fault goes through `safety`, which
refuses targets the harness did not create, and registers how to undo itself in a ledger, so a
Ctrl-C (which chaostoolkit swallows) still leaves nothing broken.
"""
