"""Reading rendered HTML back in tests: every tag, the tags met inside table cells, and each row's cell texts."""

from __future__ import annotations

from html.parser import HTMLParser


class HtmlTables(HTMLParser):
    """Every tag of a rendered document, the tags met inside table cells, and the text of each row's cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.cell_tags: set[str] = set()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if self._cell is not None:
            self.cell_tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
