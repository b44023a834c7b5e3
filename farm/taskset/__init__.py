"""Task set: schema, loader, capabilities, probe catalogue, placeholders and the task-set rules."""
