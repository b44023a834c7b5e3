"""The android lane: devices, preparation, executors, pull, and the run flow."""
