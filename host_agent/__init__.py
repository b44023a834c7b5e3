"""Host-side phone agent: observes the screen through uiautomator2, acts through tools, ends with evidence."""
