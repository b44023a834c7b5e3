"""Where an attempt's pages come from: the stand-in sites (nothing leaves the machine), a HAR recording of
them, and a replay that serves only from the recording (misses fail visibly and are counted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from farm.errors import FarmError
from farm.llm.client import make_client
from farm.llm.model_config import LLMConfig
from farm.llm.stub import ModelStub, StubReply
from web_bench.webvoyager.agent import AgentSettings, run_attempt
from web_bench.webvoyager.har import har_urls
from web_bench.webvoyager.model import AgentResult, WvTask
from web_bench.webvoyager.standin import DEFAULT_STAND_IN, StandIn
from web_bench.webvoyager.trace import NetworkEvent, read_trace

KEY = "sk-test-har"
RECIPE = "https://www.allrecipes.com/recipe/vegetarian-four-cheese-lasagna/"
SALMON = "https://www.allrecipes.com/recipe/easy-baked-salmon/"
TASK = WvTask(task_id="Allrecipes--0", site="Allrecipes", website="https://www.allrecipes.com/",
              confirmed_task="Provide a recipe for vegetarian lasagna suitable for 6 people.")


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub() as server:
        yield server


def _settings(stub: ModelStub, **fields: object) -> AgentSettings:
    llm = LLMConfig(provider="openai", model="stub-model", base_url=stub.base_url_openai, api_key_env="WV_TEST_KEY",
                    max_retries=0)
    return AgentSettings.model_validate({"llm": llm, "timeout_ms": 60_000, **fields})


def _run(stub: ModelStub, attempt_dir: Path, settings: AgentSettings) -> AgentResult:
    client = make_client(settings.llm, environ={"WV_TEST_KEY": KEY})
    try:
        return run_attempt(TASK, 1, attempt_dir, settings, client=client)
    finally:
        client.close()


def _nav(url: str) -> StubReply:
    return StubReply(tool_calls=[("browser_navigate", {"url": url})])


def test_replay_serves_the_recorded_pages_and_counts_what_is_missing(stub: ModelStub, tmp_path: Path) -> None:
    har = tmp_path / "Allrecipes--0.har"
    stub.script([_nav(RECIPE), StubReply(text="recorded")])
    recorded = _run(stub, tmp_path / "record", _settings(stub, har_mode="record", har_path=str(har),
                                                          stand_in=str(DEFAULT_STAND_IN)))
    recorded_page = stub.requests[1].tool_results()[0]
    assert recorded.status == "completed" and recorded.har == str(har)
    # Responses served by stand-in routing are in the recording.
    assert RECIPE in har_urls(har)

    # No stand-in now: the recording is the only place that page can come from.
    stub.script([_nav(RECIPE), _nav(SALMON), StubReply(text="replayed")])
    replayed = _run(stub, tmp_path / "replay", _settings(stub, har_mode="replay", har_path=str(har)))
    page, missing = stub.requests[4].tool_results()
    assert page == recorded_page and "Servings" in page and "Stand-in page" in page
    assert "ERR_FAILED" in missing
    assert (replayed.status, replayed.har_misses, replayed.failed_steps) == ("completed", 1, 1)
    misses = [e for e in read_trace(tmp_path / "replay" / "trace.ndjson") if isinstance(e, NetworkEvent)]
    assert [(e.action, e.url) for e in misses] == [("har_miss", SALMON)]


def test_recording_without_a_path_goes_to_the_attempt_directory(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([_nav(RECIPE), StubReply(text="ok")])
    result = _run(stub, tmp_path / "a", _settings(stub, har_mode="record", stand_in=str(DEFAULT_STAND_IN)))
    assert result.har == "har/recording.har"
    assert RECIPE in har_urls(tmp_path / "a" / "har" / "recording.har")


def test_replaying_a_missing_recording_is_a_browser_error_naming_it(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply(text="never")])
    missing = tmp_path / "nowhere.har"
    result = _run(stub, tmp_path / "a", _settings(stub, har_mode="replay", har_path=str(missing)))
    assert (result.status, result.error_kind) == ("error", "browser_error")
    assert result.error is not None and str(missing) in result.error
    assert stub.requests == []


def test_with_stand_in_sites_nothing_else_leaves_the_machine(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([_nav("https://example.com/"), StubReply(text="blocked")])
    result = _run(stub, tmp_path / "a", _settings(stub, stand_in=str(DEFAULT_STAND_IN)))
    assert "ERR_BLOCKED_BY_CLIENT" in stub.requests[1].tool_results()[0]
    assert result.failed_steps == 1
    blocked = [e for e in read_trace(tmp_path / "a" / "trace.ndjson") if isinstance(e, NetworkEvent)]
    assert [(e.action, e.url) for e in blocked] == [("offline_block", "https://example.com/")]


def test_replay_needs_a_recording_and_no_stand_in(stub: ModelStub) -> None:
    with pytest.raises(ValidationError, match="har_path"):
        _settings(stub, har_mode="replay")
    with pytest.raises(ValidationError, match="stand_in"):
        _settings(stub, har_mode="replay", har_path="x.har", stand_in=str(DEFAULT_STAND_IN))


def test_stand_in_paths_map_to_pages_with_their_status() -> None:
    sites = StandIn(DEFAULT_STAND_IN)
    assert sites.hosts == ["www.allrecipes.com", "www.amazon.com", "www.apple.com"]
    home = sites.resolve("https://www.allrecipes.com/")
    assert home.status == 200 and b"Search recipes" in home.body and home.content_type.startswith("text/html")
    assert b"results" in sites.resolve("https://www.allrecipes.com/search?q=lasagna").body
    assert sites.resolve("https://www.allrecipes.com/restricted/").status == 403
    assert b"Enter the characters" in sites.resolve("http://www.amazon.com/errors/validateCaptcha").body
    assert sites.resolve("https://www.apple.com/no-such-page").status == 404


def test_stand_in_never_serves_a_file_outside_its_host_folder() -> None:
    sites = StandIn(DEFAULT_STAND_IN)
    assert sites.resolve("https://www.apple.com/../www.amazon.com/index.html").status == 404
    assert sites.resolve("https://www.apple.com/%2e%2e/README.md").status == 404
    assert not sites.serves("https://www.google.com/") and not sites.serves("ftp://www.apple.com/")


def test_a_broken_routes_file_is_refused_by_name(tmp_path: Path) -> None:
    site = tmp_path / "www.apple.com"
    site.mkdir()
    (site / "_routes.json").write_text('{"/x/": {"file": "x.html", "status": "teapot"}}', encoding="utf-8")
    with pytest.raises(FarmError, match="_routes.json"):
        StandIn(tmp_path)
