"""The agent and host-executor flags, declared once for every command that runs tasks (`run`, `sweep`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from farm.cli.paths import check_input_dir, check_output_dir, runs_dir_setting, tasks_dir_setting
from farm.errors import FarmError

if TYPE_CHECKING:
    # Imported when a command runs, not when `farm` builds its command list (every invocation pays that).
    from farm.android.options import AgentOptions, HostSettings
    from farm.taskset.select import TaskSelection

Profile = Annotated[str | None, typer.Option("--profile", metavar="NAME", help="Instrument profile from farm.yaml.")]
ExecutorName = Annotated[str, typer.Option("--executor", metavar="instrument|host",
                                           help="instrument (the agent app on the phone) or host.")]
AllowIrreversible = Annotated[bool, typer.Option(
    "--allow-irreversible", help="Run irreversible tasks: they really send, delete or order (named first; asks at a "
                                 "terminal unless --yes).")]
PriceIn = Annotated[float | None, typer.Option("--price-in", metavar="USD", help="USD per million input tokens.")]
PriceOut = Annotated[float | None, typer.Option("--price-out", metavar="USD", help="USD per million output tokens.")]
PriceCached = Annotated[float | None, typer.Option("--price-cached", metavar="USD",
                                                   help="USD per million cached tokens.")]
OnTakeover = Annotated[str | None, typer.Option("--on-takeover", metavar="cancel|wait",
                                                help="What the agent does when a person takes over.")]
Channel = Annotated[str | None, typer.Option("--channel", metavar="web|app", help="Force web or app.")]
Flags = Annotated[str | None, typer.Option("--flags", metavar="FLAGS",
                                           help="evalFlags: none, or key=on / key=off pairs joined by commas.")]
LearnSkills = Annotated[bool, typer.Option("--learn-skills", help="Let the agent learn skills.")]
Memory = Annotated[bool, typer.Option("--memory", help="Let the agent keep memories.")]
TasksDir = Annotated[Path | None, typer.Option("--tasks-dir", metavar="DIR",
                                               help="Task set root (default farm.yaml tasks_dir, else tasks/).")]
RunsDir = Annotated[Path | None, typer.Option(
    "--runs-dir", metavar="DIR", help="Where run directories live (default: runs_dir from farm.yaml, else runs).")]
Config = Annotated[Path | None, typer.Option("--config", metavar="FILE",
                                             help="farm.yaml (default ./farm.yaml if present).")]
Policy = Annotated[str | None, typer.Option("--policy", metavar="model|scripted",
                                            help="host executor: a model, or the scripted policy.")]
Model = Annotated[str | None, typer.Option("--model", metavar="NAME", help="host executor: model name.")]
Provider = Annotated[str | None, typer.Option("--provider", metavar="openai|anthropic",
                                              help="host executor: the model's API.")]
BaseUrl = Annotated[str | None, typer.Option("--base-url", metavar="URL", help="host executor: model endpoint.")]
ApiKeyEnv = Annotated[str | None, typer.Option("--api-key-env", metavar="VAR",
                                               help="host executor: variable holding the key.")]
ReasoningEffort = Annotated[str | None, typer.Option("--reasoning-effort", metavar="LEVEL",
                                                     help="host executor: minimal, low, medium or high.")]
Screenshots = Annotated[bool, typer.Option("--screenshots", help="host executor: send screenshots to the model.")]
ScriptsDir = Annotated[Path | None, typer.Option("--scripts-dir", metavar="DIR",
                                                 help="host executor: scripted policy's scripts.")]
Device = Annotated[list[str] | None, typer.Option("--device", metavar="SERIAL", help="Phone serial (repeatable).")]
RunName = Annotated[str | None, typer.Option("--run", metavar="RUN", help="Id of the new run (default: made up).")]
RunIdAlias = Annotated[str | None, typer.Option("--run-id", metavar="RUN", hidden=True, help="Old name of --run.")]
Resume = Annotated[str | None, typer.Option("--resume", metavar="RUN", help="Continue the stopped run RUN "
                                                                              "(with its own options).")]
FailUnder = Annotated[float | None, typer.Option("--fail-under", min=0.0, max=1.0, metavar="RATE",
                                                 help="Exit 4 when the pass rate is below this (0–1).")]
Split = Annotated[str | None, typer.Option("--split", metavar="tune|holdout|all", help="Task pool.")]

def agent_options(
    *, split: str, set_prefix: str | None, allow_irreversible: bool, price_in: float | None, price_out: float | None,
    price_cached: float | None, on_takeover: str | None, channel: str | None, flags: str | None, learn_skills: bool,
    memory: bool,
) -> AgentOptions:
    """The agent options from the flags (a bad choice is one line naming the flag)."""
    from farm.android.options import AgentOptions, from_flags

    return from_flags(
        AgentOptions, split=split, set_prefix=set_prefix, allow_irreversible=allow_irreversible, price_in=price_in,
        price_out=price_out, price_cached=price_cached, on_takeover=on_takeover, channel=channel, flags=flags,
        learn_skills=learn_skills, memory=memory,
    )


def executor_name(value: str) -> Literal["instrument", "host"]:
    """`--executor` checked (a bad one is one line naming the choices)."""
    if value == "instrument":
        return "instrument"
    if value == "host":
        return "host"
    raise FarmError(f"--executor {value}: unknown executor", hint="use instrument or host")


def host_settings(
    executor: str, *, policy: str | None, model: str | None, provider: str | None, base_url: str | None,
    api_key_env: str | None, reasoning_effort: str | None, screenshots: bool, scripts_dir: Path | None,
) -> HostSettings | None:
    """The host executor's settings from the flags; None for the instrument executor."""
    if scripts_dir is not None:
        check_input_dir(scripts_dir, "--scripts-dir",
                        hint="pass the directory holding the scripted policy's scripts (default fixtures/scripts/)")
    if executor != "host":
        return None
    from farm.android.options import HostSettings, from_flags

    return from_flags(
        HostSettings, policy=policy, model=model, provider=provider, base_url=base_url, api_key_env=api_key_env,
        reasoning_effort=reasoning_effort, screenshots=screenshots, scripts_dir=scripts_dir,
    )


def check_fraction(value: float | None, flag: str) -> float | None:
    """`value` if it is None or a number in [0, 1] (NaN is not); else a one-line FarmError naming `flag`."""
    if value is not None and not 0.0 <= value <= 1.0:
        raise FarmError(f"{flag} {value:g}: not a rate between 0 and 1", hint=f"pass e.g. {flag} 0.8")
    return value


def check_runs_dir(runs_dir: Path | None, config: Path | None) -> Path:
    """The runs directory (the flag, else farm.yaml's `runs_dir`, else `runs`) when it is a directory or can be
    made: checked before a phone is reached or anything is written, so a bad one is one line naming where it
    came from."""
    found = runs_dir_setting(runs_dir, config)
    return check_output_dir(found.value, found.what())


def check_adb_port() -> None:
    """ANDROID_ADB_SERVER_PORT, when set, is a port number: checked before anything is written."""
    from farm.android.devices import local_port

    local_port()


def runs_root(runs_dir: Path | None, config: Path | None) -> Path:
    """The runs directory: the flag, else farm.yaml's `runs_dir`, else `runs`."""
    return runs_dir_setting(runs_dir, config).value


def tasks_root(tasks_dir: Path | None, config: Path | None) -> Path:
    """The task-set root: the flag, else farm.yaml's `tasks_dir`, else `tasks`."""
    return tasks_dir_setting(tasks_dir, config).value


def with_selection(agent: AgentOptions, selection: TaskSelection | None) -> tuple[AgentOptions, TaskSelection | None]:
    """The agent options and the request's selection: one `--set` and nothing else stays the agent's set prefix
    (what the agent app's `evalSet` says); anything more goes to the request as a whole."""
    if selection is None:
        return agent, None
    single = selection.single_set()
    if single is not None:
        return agent.model_copy(update={"set_prefix": single}), None
    return agent, selection
