"""The deterministic task site served on 127.0.0.1: six tasks whose data varies with the seed."""

from web_bench.paired.site.catalog import SUITE_VERSION, TASK_NAMES, TaskInstance, Verdict, make_instance, validate

__all__ = ["SUITE_VERSION", "TASK_NAMES", "TaskInstance", "Verdict", "make_instance", "validate"]
