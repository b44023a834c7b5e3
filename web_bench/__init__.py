"""The web lane: a deterministic local task site, one browser tool contract with two backends,
a paired runner and its statistical report (and, under `webvoyager/`, the WebVoyager runner)."""
