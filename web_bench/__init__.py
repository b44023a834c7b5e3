"""The browser lanes: one `browser_*` tool contract and its backends (`browser/`, `extension/`), seed 001's paired
backend benchmark on a local task site (`paired/`), and seed 002's WebVoyager lane (`webvoyager/`)."""
