"""The lanes' plug-ins to the farm's shared machinery, composed in one place above both.

`farm.report.lanes` holds the registry of lane report sections and knows no lane; each lane's section module
registers its builder when imported. `install()` imports them. Whoever builds a run report (`farm report`,
the sweep's finish) calls it first; the report refuses a run whose lane has sections but no builder.
"""

from __future__ import annotations


def install() -> None:
    """Register every lane's report sections (idempotent: a module registers once, when first imported)."""
    import farm.desktop.report_section  # noqa: F401
    import web_bench.paired.report_section  # noqa: F401
    import web_bench.webvoyager.report_section  # noqa: F401
