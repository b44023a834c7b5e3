"""Credentials are removed in every shape they take — and nothing that is not one is touched."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import JsonValue

import farm.manifest
import farm.redact
from farm.redact import REDACTED, redact, redact_argv, redact_text, secret_values

SECRET = "sk-live-9f8e7d6c5b4a"
NO_ENV: dict[str, str] = {}


def test_url_user_info_is_removed_and_the_host_kept() -> None:
    out = redact({"llm": {"base_url": f"https://user:{SECRET}@models.example.com:8443/v1"}}, secrets=())
    assert out == {"llm": {"base_url": f"https://{REDACTED}@models.example.com:8443/v1"}}


def test_a_token_given_as_the_url_user_is_removed() -> None:
    assert redact_text(f"https://{SECRET}@git.example.com/repo") == f"https://{REDACTED}@git.example.com/repo"


def test_every_url_query_value_is_removed_and_the_names_kept() -> None:
    out = redact_text(f"see http://h.example/v1?api_key={SECRET}&sig=abc&flag for details")
    assert out == f"see http://h.example/v1?api_key={REDACTED}&sig={REDACTED}&{REDACTED} for details"


def test_a_url_fragment_holding_values_is_removed() -> None:
    assert redact_text(f"https://h/cb#access_token={SECRET}") == f"https://h/cb#access_token={REDACTED}"


def test_a_url_inside_a_list_deep_in_the_tree_is_redacted() -> None:
    out = redact({"a": [{"b": [f"wss://u:{SECRET}@h/socket"]}]}, secrets=())
    assert SECRET not in repr(out)


def test_a_clean_url_and_ordinary_values_are_left_exactly_as_they_are() -> None:
    tree: JsonValue = {
        "llm": {"base_url": "https://api.example.com/v1/", "model": "gpt-x", "max_output_tokens": 4096,
                "api_key_env": "OPENAI_API_KEY", "temperature": 0.5},
        "adb_servers": ["127.0.0.1:5037", "lab-host:5038"],
        "when": "2026-12-01T03:00:00Z",
        "note": "a plain sentence: nothing secret here",
    }
    assert redact(tree, secrets=()) == tree


def test_credential_keys_are_removed_whatever_their_nesting_and_spelling() -> None:
    tree: JsonValue = {"apiKey": "a1", "x-api-key": "a2", "Authorization": "a3", "db": {"password": 123456},
            "servers": [{"auth_token": "a4"}], "api_tokens": ["a5"], "session_cookie": "a6"}
    out = redact(tree, secrets=())
    assert out == {"apiKey": REDACTED, "x-api-key": REDACTED, "Authorization": REDACTED, "db": {"password": REDACTED},
                   "servers": [{"auth_token": REDACTED}], "api_tokens": REDACTED, "session_cookie": REDACTED}


def test_counts_of_tokens_and_flags_are_not_credentials() -> None:
    tree: JsonValue = {"max_output_tokens": 4096, "openai_max_tokens_param": "max_tokens", "require_api_key": True,
            "api_key": None, "token": ""}
    assert redact(tree, secrets=()) == tree


def test_a_keyword_selection_is_no_credential_but_keys_are() -> None:
    tree: JsonValue = {"selection": {"keyword": "alarm and not weekdays", "keywords": ["calc"]},
                       "ssh_keys": ["k1"], "privateKey": "k2", "secret_key": "k3"}
    assert redact(tree, secrets=()) == {"selection": {"keyword": "alarm and not weekdays", "keywords": ["calc"]},
                                        "ssh_keys": REDACTED, "privateKey": REDACTED, "secret_key": REDACTED}


def test_a_credential_under_a_tokens_key_is_still_removed() -> None:
    assert redact({"api_tokens": "Abc123xyz", "tokens": ["t1"]}, secrets=()) == {
        "api_tokens": REDACTED, "tokens": REDACTED
    }


def test_a_key_pasted_where_a_variable_name_belongs_is_removed() -> None:
    out = redact({"llm": {"api_key_env": SECRET, "other_env": "GOOD_NAME"}}, secrets=())
    assert out == {"llm": {"api_key_env": REDACTED, "other_env": "GOOD_NAME"}}


def test_an_authorization_header_string_is_removed() -> None:
    out = redact({"headers": [f"Authorization: Bearer {SECRET}", "Accept: application/json"]}, secrets=())
    assert out == {"headers": [f"Authorization: {REDACTED}", "Accept: application/json"]}


def test_an_api_key_header_string_is_removed() -> None:
    assert redact_text(f"x-api-key: {SECRET}") == f"x-api-key: {REDACTED}"


def test_a_header_after_an_ordinary_pair_on_the_same_line_is_removed() -> None:
    text = f"url: https://h.example/v1, Authorization: Bearer {SECRET}"
    assert redact_text(text) == f"url: https://h.example/v1, Authorization: {REDACTED}"


def test_a_bearer_token_without_a_header_name_is_removed() -> None:
    assert redact_text(f"sent Bearer {SECRET} upstream") == f"sent Bearer {REDACTED} upstream"


def test_credential_assignments_in_text_are_removed() -> None:
    out = redact_text(f"OPENAI_API_KEY={SECRET} farm run; dsn password=hunter22;host=db max_tokens=100")
    assert out == f"OPENAI_API_KEY={REDACTED} farm run; dsn password={REDACTED};host=db max_tokens=100"


def test_the_value_of_the_variable_the_config_names_is_removed_anywhere() -> None:
    env = {"MY_LLM_CRED": SECRET}
    tree: JsonValue = {"llm": {"api_key_env": "MY_LLM_CRED"}, "notes": [f"echo {SECRET}"], "label": SECRET}
    found = secret_values(tree, environ=env)
    assert found == {SECRET}
    out = redact(tree, secrets=found)
    assert out == {"llm": {"api_key_env": "MY_LLM_CRED"}, "notes": [f"echo {REDACTED}"], "label": REDACTED}


def test_the_value_of_the_variable_the_command_line_names_is_found() -> None:
    env = {"A_VAR": SECRET, "B_VAR": "sk-other-12345678", "UNNAMED": "not-a-secret-value"}
    assert secret_values(argv=["farm", "--api-key-env", "A_VAR", "--x-env=B_VAR"], environ=env) == {
        SECRET, "sk-other-12345678"
    }


def test_variables_whose_name_says_credential_are_found_unnamed() -> None:
    env = {"OPENAI_API_KEY": SECRET, "GITHUB_TOKEN": "ghp_abcdefgh", "TOKENIZERS_PARALLELISM": "false-ish-x",
           "KEYCHAIN_PATH": "/home/user/keys", "HOME": "/root/home-dir"}
    assert secret_values(environ=env) == {SECRET, "ghp_abcdefgh"}


def test_short_variable_values_do_not_blank_ordinary_text() -> None:
    env = {"PIN_PASSWORD": "1234", "SHORT_TOKEN": "true"}
    assert secret_values({"x_env": "PIN_PASSWORD"}, environ=env) == frozenset()
    assert redact_text("retry 1234 is true", secrets={"1234"}) == "retry 1234 is true"


def test_a_percent_encoded_secret_in_a_url_path_is_removed() -> None:
    secret = "pa ss/word+42"
    out = redact_text("https://h.example/keys/pa%20ss%2Fword%2B42/info", secrets={secret})
    assert out == f"https://h.example/keys/{REDACTED}/info"


def test_redact_finds_the_variables_of_its_own_tree_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_REDACT_VAR", SECRET)
    out = redact({"llm": {"api_key_env": "FARM_TEST_REDACT_VAR"}, "note": f"key is {SECRET}"})
    assert out == {"llm": {"api_key_env": "FARM_TEST_REDACT_VAR"}, "note": f"key is {REDACTED}"}


def test_argv_base_url_with_equals_is_redacted() -> None:
    out = redact_argv(["farm", "run", f"--base-url=https://u:{SECRET}@h/v1?api_key={SECRET}"], secrets=())
    assert out == ["farm", "run", f"--base-url=https://{REDACTED}@h/v1?api_key={REDACTED}"]


def test_argv_base_url_as_the_next_argument_is_redacted() -> None:
    out = redact_argv(["farm", "run", "--base-url", f"https://h/v1?api_key={SECRET}"], secrets=())
    assert out == ["farm", "run", "--base-url", f"https://h/v1?api_key={REDACTED}"]


def test_argv_credential_options_lose_their_values_in_both_forms() -> None:
    out = redact_argv(["farm", "--api-key", SECRET, f"--token={SECRET}", "--split", "tune"], secrets=())
    assert out == ["farm", "--api-key", REDACTED, f"--token={REDACTED}", "--split", "tune"]


def test_argv_variable_names_are_kept_and_pasted_keys_removed() -> None:
    argv = ["farm", "--api-key-env", "OPENAI_API_KEY", f"--api-key-env={SECRET}", "--api-key-env", SECRET]
    assert redact_argv(argv, secrets=()) == [
        "farm", "--api-key-env", "OPENAI_API_KEY", f"--api-key-env={REDACTED}", "--api-key-env", REDACTED,
    ]


def test_argv_header_argument_is_redacted() -> None:
    out = redact_argv(["curl", "-H", f"Authorization: Bearer {SECRET}", "http://h"], secrets=())
    assert out == ["curl", "-H", f"Authorization: {REDACTED}", "http://h"]


def test_argv_value_of_a_named_variable_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_ARGV_VAR", SECRET)
    out = redact_argv(["farm", "--api-key-env", "FARM_TEST_ARGV_VAR", "--label", f"x{SECRET}y"])
    assert out == ["farm", "--api-key-env", "FARM_TEST_ARGV_VAR", "--label", f"x{REDACTED}y"]


def test_an_ordinary_command_line_is_left_exactly_as_it_is() -> None:
    argv = ["farm", "sweep", "--split", "all", "--repeats", "3", "--max-tokens", "100", "--label", "nightly",
            "--base-url", "http://127.0.0.1:8000/v1", "--api-key-env", "OPENAI_API_KEY", "--", "-x"]
    assert redact_argv(argv, secrets=()) == argv


def test_redacting_twice_changes_nothing_more() -> None:
    tree: JsonValue = {
        "u": f"https://a:{SECRET}@h/?k={SECRET}", "h": f"Authorization: Bearer {SECRET}", "api_key": SECRET,
    }
    once = redact(tree, secrets={SECRET})
    assert redact(once, secrets={SECRET}) == once


def test_the_manifest_module_still_exports_redact() -> None:
    assert farm.manifest.redact is farm.redact.redact
    assert farm.manifest.redact_argv is farm.redact.redact_argv
    assert farm.manifest.REDACTED == REDACTED


_TEXT = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="@/?#&=:\"'`<>"), min_size=8,
                max_size=40)


@given(secret=_TEXT, key=st.sampled_from(["base_url", "endpoint", "note"]))
def test_a_secret_in_a_url_or_named_variable_never_survives(secret: str, key: str) -> None:
    assume(secret not in REDACTED)
    env = {"SOME_VAR": secret}
    tree: JsonValue = {"llm": {"api_key_env": "SOME_VAR"}, key: f"https://user:{secret}@h.example/v1?q={secret}"}
    argv = ["farm", "--base-url", f"https://h.example/v1?api_key={secret}", f"--note={secret}"]
    found = secret_values(tree, argv, environ=env)
    assert secret not in repr(redact(tree, secrets=found))
    assert secret not in repr(redact_argv(argv, secrets=found))
    assert secret not in repr(redact({"u": f"https://user:{secret}@h/v1"}, secrets=secret_values(environ=NO_ENV)))
