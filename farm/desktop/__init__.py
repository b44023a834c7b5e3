"""desktop-v1: a ledger for human-executed desktop tasks (plan, record, verify, report).

Nothing here operates a desktop: the operator runs each slot by hand and records the result.
"""
