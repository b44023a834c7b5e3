"""Reports of a run: report.md, report.html (offline charts), junit.xml, scores.csv."""
