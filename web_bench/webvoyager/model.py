"""The WebVoyager lane's file formats (seed 002): a task, one model request, an agent attempt's result, a
judge verdict, and the per-task view that `results.ndjson` lines and result revisions carry.

Unknown stays unknown: a token count, a duration or a cost that was not observed is null, never 0.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.results.record import Tokens

WV_SCHEMA_VERSION: Literal[1] = 1
"""Version of every WebVoyager lane file; readers refuse versions they do not know."""

Site = Literal["Allrecipes", "Apple", "Amazon"]
SITES: tuple[Site, ...] = ("Allrecipes", "Apple", "Amazon")
"""The three sites of the 126-task set, in the order reports list them (the data file has Allrecipes, Amazon,
Apple)."""

JudgeMode = Literal["reference", "evidence", "none"]

AgentStatus = Literal["completed", "error", "timeout", "step_limit"]
"""How the agent's run ended: `completed` = the agent stopped with an answer (not a pass); `step_limit` = the
model-round limit ran out."""

ErrorKind = Literal[
    "quota",  # the provider's quota is used up (HTTP 429/200 with a quota code, MiniMax 2056…): retried on --resume
    "auth",  # the key was refused: never retried in the run
    "service_unavailable",  # 5xx / timeouts / transport errors past the retry budget: stops dispatch
    "website_unavailable",  # access restricted, challenge pages, unreachable site: in the denominator, counted apart
    "model_error",  # the model answered something unusable (bad response, refused request)
    "browser_error",  # Chromium failed to start or crashed
    "interrupted",  # the run was stopped (Ctrl-C, kill) while this task ran
    "internal",  # a harness bug
]

CallRole = Literal["agent", "judge", "preflight"]
CallOutcome = Literal[
    "ok", "rate_limit", "server", "timeout", "connection", "client", "bad_response", "quota", "auth",
]


class WvTask(BaseModel):
    """One task of the 549-task reference file (`WebVoyager_data.json`), with its site."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    """`Allrecipes--0` style id, unique in the set."""
    confirmed_task: str
    """The task text given to the agent."""
    website: str
    """Start URL."""
    site: Site
    """Site name (the part of the id before `--`)."""


class ModelCall(BaseModel):
    """One HTTP request to a model (agent, judge or preflight), retries and failures included."""

    model_config = ConfigDict(extra="forbid")

    role: CallRole
    """Who made it."""
    step: int | None = None
    """Logical model step (1-based) this request belongs to; retries share their step. Null for preflight."""
    retry: bool = False
    """Whether the request repeated a failed one of the same step."""
    started_at: str
    """UTC ISO time the request was sent."""
    duration_ms: float = Field(ge=0)
    """Time to the response or the failure."""
    outcome: CallOutcome
    """`ok` or the kind of failure."""
    status: int | None = None
    """HTTP status when a response arrived."""
    model: str | None = None
    """Model name as configured (or as the provider reported it)."""
    usage: Tokens | None = None
    """Token usage the response reported; null when the request returned none (failures included)."""
    usage_expected: bool = False
    """Whether the request may have been billed, so a missing usage makes totals unknown (an `ok` response, or
    a timeout / cut connection after the request was sent). Refused requests (429, 5xx, quota, auth) are not."""
    cost_usd: float | None = None
    """Cost of this request at the configured price; null when the price or a billed count is unknown."""
    long_context: bool = False
    """Whether the request crossed the price's context threshold (the long-context multiplier applied)."""
    error: str | None = None
    """One-line failure detail (credentials scrubbed)."""


class UsageTotals(BaseModel):
    """Token and cost totals over a list of `ModelCall`s, with the seed's unknown-is-null rules."""

    model_config = ConfigDict(extra="forbid")

    tokens: Tokens | None = None
    """Complete totals; null when any request that may have been billed returned no usage."""
    tokens_observed: Tokens = Field(default_factory=Tokens)
    """Sum over the requests that reported usage (a lower bound when `usage_missing_calls` > 0)."""
    usage_missing_calls: int = 0
    """Requests that may have been billed but reported no usage."""
    unpriced_calls: int = 0
    """Requests with usage whose cost could not be computed (unknown model price or cache price)."""
    cost_usd: float | None = None
    """Complete cost; null when any request is unpriced or missing usage."""
    cost_observed_usd: float = 0.0
    """Sum of the costs that could be computed (a lower bound when incomplete)."""
    request_count: int = 0
    """HTTP requests, failures and retries included (= model_rounds for the agent)."""
    retry_count: int = 0
    """Requests that repeated a failed one."""


class AgentResult(BaseModel):
    """One agent attempt at one task (`TASK_ID/result.json`, or `TASK_ID/attempts/N/result.json`)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = WV_SCHEMA_VERSION
    """Format version."""
    task_id: str
    """Task id."""
    attempt: int = Field(ge=1)
    """1 for the first attempt; re-runs (quota recovery, --rerun-ids) count up."""
    status: AgentStatus
    """How the run ended (completion of the agent, not a pass)."""
    final_answer: str | None = None
    """The agent's final text; null when it gave none."""
    error: str | None = None
    """One-line error for error/timeout/step_limit."""
    error_kind: ErrorKind | None = None
    """Why it errored, when it did (quota and website_unavailable are counted apart)."""
    steps: int = 0
    """Every tool call, failed ones included."""
    failed_steps: int = 0
    """Tool calls that returned an error."""
    incomplete_steps: int = 0
    """Tool calls cut off by the time limit (no result)."""
    model_rounds: int = 0
    """Model HTTP requests, failures and retries included (seed: never the same as steps)."""
    model_steps: int = 0
    """Logical model steps (one per reply the loop asked for)."""
    retry_count: int = 0
    """Model requests that repeated a failed one."""
    started_at: str
    """UTC ISO time the worker started (browser launch)."""
    finished_at: str | None = None
    """UTC ISO time the agent stopped (before judge and browser cleanup); null if never observed."""
    duration_ms: float | None = None
    """Agent time, worker start to agent stop; null when unknown."""
    duration_basis: Literal["worker", "parent_observed", "lower_bound"] = "worker"
    """`worker`: measured by the task's own clock; `parent_observed`: the worker was killed and the parent's
    interval is used; `lower_bound`: recovered after a crash with an unknown end."""
    model: str | None = None
    """Agent model."""
    model_calls: list[ModelCall] = Field(default_factory=list)
    """Every agent request, in order."""
    usage: UsageTotals = Field(default_factory=UsageTotals)
    """Totals over `model_calls`."""
    final_screenshot: str | None = None
    """Path (relative to the task directory) of the final page screenshot, named by content hash; null if none."""
    screenshot_error: str | None = None
    """Why there is no final screenshot (also in the trace); never a faked file."""
    restricted_origins: list[str] = Field(default_factory=list)
    """Origins that answered with an access-restriction or challenge page."""
    restricted_results: int = 0
    """Tool results that hit a restricted page."""
    har: str | None = None
    """HAR file of the attempt (recording or replay source), when one was used."""
    har_misses: int = 0
    """Requests not found in the replayed HAR (they fail visibly)."""


class JudgeVerdict(BaseModel):
    """One judge verdict (`judge` field of the task view; the full exchange is in `judge-<mode>.ndjson`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mode: Literal["reference", "evidence"]
    """Which judge."""
    passed: bool | None = Field(default=None, alias="pass")
    """The verdict; null when no valid verdict was obtained (`judge_error` says why) — never a failure."""
    reason: str | None = None
    """The judge's one-sentence reason."""
    judge_error: str | None = None
    """API, truncation or format error that left the task unjudged."""
    error_kind: ErrorKind | None = None
    """`quota` when the judge hit the provider's quota (the task goes to quota_rejudge_task_ids)."""
    prompt_sha256: str | None = None
    """SHA-256 of the judge prompt used."""
    model: str | None = None
    """Judge model."""
    attempt: int = Field(ge=1)
    """The agent attempt judged."""
    model_calls: list[ModelCall] = Field(default_factory=list)
    """Every judge request (repairs included)."""
    usage: UsageTotals = Field(default_factory=UsageTotals)
    """Totals over `model_calls`."""
    cited: list[int] = Field(default_factory=list)
    """Evidence mode: observation numbers the verdict cites."""
    judged_at: str
    """UTC ISO time the verdict was recorded."""


class TaskView(BaseModel):
    """The current state of one task: its latest agent attempt and the judge verdict on it.

    A `results.ndjson` line is one of these (append-only; the last line of a task wins), and every result
    revision carries one.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = WV_SCHEMA_VERSION
    """Format version."""
    task_id: str
    """Task id."""
    site: Site
    """Site."""
    agent: AgentResult
    """The current (latest) agent attempt."""
    judge: JudgeVerdict | None = None
    """The verdict on `agent`; null while unjudged (or with `--judge none`)."""
    superseded_attempts: list[int] = Field(default_factory=list)
    """Earlier attempts of this task, kept on disk; their costs are reported apart (superseded_*)."""
    superseded_agent_cost_usd: float | None = 0.0
    """Summed agent cost of the superseded attempts; null when any of them is unknown."""
    provenance_run: str | None = None
    """Run directory the attempt was made in, when it came from another run (--retry-from, backfill)."""


class BrowserObservation(BaseModel):
    """One browser tool result as the evidence judge sees it (read back from `trace.ndjson`)."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=1)
    """1-based number of the tool call in the attempt."""
    tool: str
    """Tool name (`browser_*`)."""
    url: str | None = None
    """Page URL after the call, when known."""
    captured_at: str
    """UTC ISO time the result was captured."""
    text: str
    """The tool's text result (snapshots may be long)."""
    is_error: bool = False
    """Whether the call failed; a verdict must cite at least one non-error observation."""
