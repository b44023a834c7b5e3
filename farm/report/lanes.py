"""Lane sections: what a lane adds to the one run report, beside the shared record tables.

Every lane's units are records, so the headline, failures and tables already cover them; a lane registers a
builder here for what only it has (the web lane's paired backend table and latency distributions, the desktop
lane's ledger batches). The writers call `lane_sections` once per report and render each section in place.

This module knows no lane's implementation: each lane's section module registers its builder when it is
imported, and `farm.lane_plugins.install()` (above the report and the lanes) imports them. Whoever builds
reports calls it first; a run with a lane that has sections but no registered builder is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.manifest import Manifest

LaneName = Literal["android", "web", "webvoyager", "desktop"]

SECTIONED_LANES: frozenset[LaneName] = frozenset({"web", "webvoyager", "desktop"})
"""Lanes that add a section: a report over a run with one of them needs that lane's builder registered."""


class LaneSectionsNotInstalled(RuntimeError):
    """A run has a lane with sections whose builder was never registered (a programming error, not the run's)."""


class SectionTable(BaseModel):
    """A table in a lane section; cells are plain text (the writers escape them)."""

    model_config = ConfigDict(extra="forbid")

    title: str = ""
    """Caption above the table (empty: none)."""
    header: list[str]
    """Column names."""
    rows: list[list[str]]
    """Rows of cells, each as long as `header`."""
    numeric: list[int] = Field(default_factory=list)
    """Indexes of right-aligned (number) columns."""


class LaneSection(BaseModel):
    """One lane's section of a run report."""

    model_config = ConfigDict(extra="forbid")

    lane: LaneName
    """The lane it belongs to."""
    run: str
    """The run it comes from."""
    title: str
    """Section heading."""
    notes: list[str] = Field(default_factory=list)
    """Paragraphs of plain text shown before the tables (caveats, provenance)."""
    tables: list[SectionTable] = Field(default_factory=list)
    """Its tables, in order."""
    svg: list[str] = Field(default_factory=list)
    """Inline SVG charts made by `farm.report.charts` (trusted markup; never phone- or page-written text)."""
    links: list[str] = Field(default_factory=list)
    """Related files, relative to the run directory (the lane's own reports, batches)."""


SectionBuilder = Callable[[Path, Manifest], list[LaneSection]]
"""Builds a lane's sections from a run directory and its manifest; returns [] when the run has nothing for it."""

_BUILDERS: dict[str, SectionBuilder] = {}


def register(lane: LaneName) -> Callable[[SectionBuilder], SectionBuilder]:
    """Register `fn` as the section builder of `lane` (one per lane)."""

    def wrap(fn: SectionBuilder) -> SectionBuilder:
        _BUILDERS[lane] = fn
        return fn

    return wrap


def lane_sections(run_dirs: Sequence[Path]) -> list[LaneSection]:
    """The sections every registered lane adds for these runs, in run order then lane order of the manifest.

    LaneSectionsNotInstalled when a run has a lane of SECTIONED_LANES with no registered builder: its section
    would silently be missing from the report.
    """
    from farm.manifest import load, manifest_path

    sections: list[LaneSection] = []
    for run_dir in run_dirs:
        if not manifest_path(run_dir).is_file():
            continue
        manifest = load(run_dir)
        for entry in manifest.lanes:
            builder = _BUILDERS.get(entry.lane)
            if builder is not None:
                sections.extend(builder(run_dir, manifest))
            elif entry.lane in SECTIONED_LANES:
                raise LaneSectionsNotInstalled(
                    f"{run_dir}: lane {entry.lane!r} has report sections but no builder is registered: "
                    "farm.lane_plugins.install() was not called before building the report")
    return sections
