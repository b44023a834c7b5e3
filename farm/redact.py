"""Credential removal for what is written about a run: config trees, command lines, free text.

A credential hides in several shapes: under a key that names it (`api_key: …`), in a URL (user-info,
a query value), in a header-like string (`Authorization: Bearer …`, `x-api-key=…`), or verbatim as the
value of an environment variable that holds one (the variable `api_key_env` names, `OPENAI_API_KEY`).
Every shape is replaced by REDACTED; names of variables (`api_key_env: OPENAI_API_KEY`) are kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

from pydantic import JsonValue

REDACTED = "***redacted***"
# Key or option names whose values are credentials, whatever their nesting or spelling.
_SECRET_WORDS = (
    "key", "token", "secret", "password", "passwd", "passphrase", "credential", "authorization", "cookie", "bearer",
)
# Names that say where a credential lives (an environment variable's name) rather than holding it.
_ENV_SUFFIXES = ("_env", "_env_var", "key_env")
# A variable whose name ends so holds a credential: its value is removed wherever it appears.
_ENV_SECRET_ENDINGS = ("KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PAT", "CREDENTIALS")
# Shorter values would blank out ordinary text (a 4-digit number, a word) without protecting anything.
MIN_SECRET_LEN = 8

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
# `name: value` runs to the end of the line (a header value has spaces: `Bearer …`); `name=value` to a separator.
_HEADER = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_.-]*)(?P<sep>[\"']?[ \t]*:[ \t]*[\"']?)(?P<value>[^\r\n\"']+)")
_ASSIGN = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_.-]*)(?P<sep>[\"']?[ \t]*=[ \t]*[\"']?)(?P<value>[^\s,;&\"']+)")
_BEARER = re.compile(r"(?i)\bbearer\s+(?!\*\*\*redacted)\S+")


def _normal(name: str) -> str:
    return name.lower().replace("-", "_")


def names_a_variable(key: str) -> bool:
    """A key or option naming an environment variable (`api_key_env`, `--api-key-env`), not a value."""
    return _normal(key).endswith(_ENV_SUFFIXES)


def is_secret_key(key: str) -> bool:
    """A key or option name whose value is a credential (`api_key`, `x-api-key`, `apiKey`, `auth_token`).

    `key` counts where a word ends with it (`api_key`, `apikey`, `ssh_keys`), not where it begins another word:
    a sweep's `keyword` selection is no credential, and removing it made the sweep impossible to resume."""
    lowered = _normal(key)
    if names_a_variable(lowered):
        return False
    if any(w.endswith(("key", "keys")) for w in re.split(r"[^a-z0-9]+", lowered)):
        return True
    return any(word in lowered for word in _SECRET_WORDS if word != "key")


def _counts_tokens(key: str) -> bool:
    # `max_output_tokens: 4096` is a count of tokens, not a token.
    lowered = _normal(key).replace("tokens", "")
    return not any(word in lowered for word in _SECRET_WORDS)


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and re.fullmatch(r"[+-]?\d+(\.\d+)?", value) is not None


def _hides(key: str, value: object) -> bool:
    if not is_secret_key(key) or value in (None, "") or isinstance(value, bool):
        return False
    # Under a `…tokens…` key, a number is a count and a snake_case word a setting (`max_completion_tokens`).
    plain = _is_number(value) or (isinstance(value, str) and re.fullmatch(r"[a-z_]+", value) is not None)
    return not (plain and _counts_tokens(key))


def secret_values(
    tree: JsonValue = None, argv: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> frozenset[str]:
    """Values of the environment variables holding credentials: those the config or the command line names
    (`api_key_env: X`, `--api-key-env X`) and those whose name says so (`*_API_KEY`, `*_TOKEN`…)."""
    env = os.environ if environ is None else environ
    names = set(_named_in_tree(tree)) | set(_named_in_argv(argv))
    names.update(n for n in env if n.upper().rsplit("_", 1)[-1] in _ENV_SECRET_ENDINGS)
    return frozenset(v for n in names if len(v := env.get(n, "")) >= MIN_SECRET_LEN)


def _named_in_tree(value: JsonValue) -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if names_a_variable(k) and isinstance(v, str) and _ENV_NAME.fullmatch(v):
                yield v
            else:
                yield from _named_in_tree(v)
    elif isinstance(value, list):
        for v in value:
            yield from _named_in_tree(v)


def _named_in_argv(argv: Sequence[str]) -> Iterable[str]:
    for i, arg in enumerate(argv):
        name, eq, val = arg.partition("=")
        if not (arg.startswith("-") and names_a_variable(name.lstrip("-"))):
            continue
        if eq:
            yield val
        elif i + 1 < len(argv):
            yield argv[i + 1]


def redact_text(text: str, secrets: Collection[str] = ()) -> str:
    """`text` with secret values, URL user-info and query values, and header-like credentials replaced."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SECRET_LEN:
            # The URL-encoded spellings too: a key pasted into a URL arrives percent-encoded.
            for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
                text = text.replace(form, REDACTED)
    text = _URL.sub(lambda m: _redact_url(m.group(0)), text)
    text = _redact_pairs(_HEADER, text)
    text = _redact_pairs(_ASSIGN, text)
    return _BEARER.sub(lambda m: m.group(0).split(None, 1)[0] + " " + REDACTED, text)


def _redact_pairs(pattern: re.Pattern[str], text: str) -> str:
    out: list[str] = []
    pos = 0
    while match := pattern.search(text, pos):
        value = match.group("value")
        if _hides(match.group("name"), value.strip()) and not value.startswith(REDACTED):
            out.append(text[pos:match.start("value")] + REDACTED)
            pos = match.end()
        else:
            # Scanning goes on inside the value: `url: https://…, Authorization: Bearer …` holds a second pair.
            out.append(text[pos:match.end("sep")])
            pos = match.end("sep")
    out.append(text[pos:])
    return "".join(out)


def _redact_url(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        # Not parseable (a bad port, a bracket): nothing of it can be shown safely.
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        # The user name is redacted too: services take a token as the user (`https://TOKEN@host`).
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = _redact_query(parts.query)
    fragment = _redact_query(parts.fragment) if "=" in parts.fragment else parts.fragment
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redact_query(query: str) -> str:
    # Every value goes, whatever its name: signatures and tokens travel as `sig=`, `code=`, `X-Amz-…=`.
    out = []
    for item in query.split("&"):
        name, eq, value = item.partition("=")
        if eq:
            out.append(f"{name}={REDACTED}" if value else item)
        else:
            out.append(REDACTED if item else item)
    return "&".join(out)


def redact(value: JsonValue, *, secrets: Collection[str] | None = None) -> JsonValue:
    """A copy of a config tree with every credential replaced: values under credential keys, URL user-info
    and query values, header-like strings, and the values of credential variables (see `secret_values`)."""
    found = secret_values(value) if secrets is None else secrets
    return _walk(value, found, by_key=True)


def redact_values(value: JsonValue, secrets: Collection[str]) -> JsonValue:
    """A copy of a tree with every string passed through `redact_text`; keys decide nothing."""
    return _walk(value, secrets, by_key=False)


def _walk(value: JsonValue, secrets: Collection[str], *, by_key: bool) -> JsonValue:
    if isinstance(value, dict):
        out: dict[str, JsonValue] = {}
        for k, v in value.items():
            key = redact_text(k, secrets)
            if by_key and _hides(k, v):
                out[key] = REDACTED
            elif by_key and names_a_variable(k) and isinstance(v, str) and v and not _ENV_NAME.fullmatch(v):
                # Someone pasted the key itself where its variable's name belongs.
                out[key] = REDACTED
            else:
                out[key] = _walk(v, secrets, by_key=by_key)
        return out
    if isinstance(value, list):
        return [_walk(v, secrets, by_key=by_key) for v in value]
    if isinstance(value, str):
        return redact_text(value, secrets)
    return value


def redact_argv(argv: Sequence[str], *, secrets: Collection[str] | None = None) -> list[str]:
    """A copy of a command line with credentials replaced: values of credential options (`--api-key X`,
    `--token=X`), URL user-info and query values in any argument (`--base-url=URL`), header-like
    arguments, and the values of credential variables (see `secret_values`)."""
    found = secret_values(argv=argv) if secrets is None else secrets
    out: list[str] = []
    pending: str | None = None
    for arg in argv:
        if pending is not None:
            option, pending = pending, None
            if names_a_variable(option):
                out.append(arg if _ENV_NAME.fullmatch(arg) else REDACTED)
            else:
                out.append(REDACTED if _hides(option, arg) else redact_text(arg, found))
            continue
        if arg.startswith("-") and arg.strip("-"):
            name, eq, value = arg.partition("=")
            option = name.lstrip("-")
            if names_a_variable(option) or is_secret_key(option):
                if not eq:
                    pending = option
                    out.append(arg)
                elif names_a_variable(option):
                    out.append(arg if _ENV_NAME.fullmatch(value) else f"{name}={REDACTED}")
                else:
                    out.append(f"{name}={REDACTED}" if _hides(option, value) else redact_text(arg, found))
                continue
        out.append(redact_text(arg, found))
    return out
