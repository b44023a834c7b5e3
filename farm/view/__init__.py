"""`farm view`: a local, read-only viewer of runs, their reports and each unit's trajectory."""
