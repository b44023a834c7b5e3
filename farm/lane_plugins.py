"""The lanes' plug-ins to the farm's shared machinery, composed in one place above both.

`farm.report.lanes` holds the registry of lane report sections and knows no lane; each lane's section module
registers its builder when imported. `install()` imports them. Whoever builds a run report (`farm report`,
the sweep's finish) calls it first; the report refuses a run whose lane has sections but no builder.
`current_report` is that call pattern for a lane that has just written into a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from farm.report.build import Built


def install() -> None:
    """Register every lane's report sections (idempotent: a module registers once, when first imported)."""
    import farm.desktop.report_section  # noqa: F401
    import web_bench.paired.report_section  # noqa: F401
    import web_bench.webvoyager.report_section  # noqa: F401


def current_report(run_dir: Path) -> Built:
    """Rebuild the run's current report (`runs/<id>/report.*` and `headline.json`; the one there before moves
    under `reports/`) over every lane's records and sections. Called whenever a lane has written into a run
    (`farm pull`, the web and WebVoyager lanes, `farm desktop attach`), so the run's one number counts it."""
    from farm.report.build import build

    install()
    return build([run_dir])
