"""agent-farm: an Android-first device-farm harness for evaluating AI agents."""

__version__ = "0.1.0"
