"""The visible evidence of a screen: the text and content-desc of its nodes, apart from structure.

Observation texts (`host_agent.observation`) carry structure next to what a person sees: the
`app: package/activity` header, widget classes, resource ids and flag words (`checked`,
`unchecked`, `click`…). Checks must read only what is on the screen, or "TextView" grounds "te",
`com.android.calculator2` grounds "2" and a resource id `btn_login_entry` looks like a login box.

Line format: `[ref] Class "text" desc="desc" (resource-id) flags`; quoted values never contain
`"` (the observation writes it as `'`). Lines that are not in this format (plain text written by
other agents' transcripts) are taken as visible text, except the `app:` header.
"""

from __future__ import annotations

import re

_NODE = re.compile(r'^\s*\[\d+\] [^\s"]+(?: "([^"]*)")?(?: desc="([^"]*)")?')
_HEADER = re.compile(r"^app: \S*$")


def visible_texts(observation: str) -> list[str]:
    """The on-screen texts of an observation, in screen order (text, then desc when it differs)."""
    out: list[str] = []
    for line in observation.splitlines():
        m = _NODE.match(line)
        if m is None:
            if line.strip() and not _HEADER.match(line.strip()):
                out.append(line.strip())
            continue
        text, desc = m.group(1), m.group(2)
        if text:
            out.append(text)
        if desc:
            out.append(desc)
    return out


def screen_text(observation: str) -> str:
    """The visible texts of an observation joined by newlines (what text checks search)."""
    return "\n".join(visible_texts(observation))
