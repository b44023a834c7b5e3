"""Lane sections: what a lane adds to the one run report, beside the shared record tables.

Every lane's units are records, so the headline, failures and tables already cover them; a lane registers a
builder here for what only it has (the web lane's paired backend table and latency distributions, the desktop
lane's ledger batches). The writers call `lane_sections` once per report and render each section in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.manifest import Manifest

LaneName = Literal["android", "web", "webvoyager", "desktop"]


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


def _load_builders() -> None:
    # The lanes' builders live with the lanes; importing them registers them.
    import importlib

    for module in ("web_bench.report_section", "web_bench.webvoyager.report_section", "farm.desktop.report_section"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def lane_sections(run_dirs: Sequence[Path]) -> list[LaneSection]:
    """The sections every registered lane adds for these runs, in run order then lane order of the manifest."""
    from farm.manifest import load, manifest_path

    _load_builders()
    sections: list[LaneSection] = []
    for run_dir in run_dirs:
        if not manifest_path(run_dir).is_file():
            continue
        manifest = load(run_dir)
        for entry in manifest.lanes:
            builder = _BUILDERS.get(entry.lane)
            if builder is not None:
                sections.extend(builder(run_dir, manifest))
    return sections
