"""The exit status of a finished run or sweep: distinct for some failed, infrastructure errors, below
`--fail-under` and unfinished, the most urgent first."""

from farm.exits import EXIT_BELOW, EXIT_FAILED, EXIT_INFRA, EXIT_OK, EXIT_UNFINISHED
from farm.sweep.request import exit_status


def _status(*, unfinished: int = 0, attempted: int = 10, passed: int = 10, errors: int = 0,
            fail_under: float | None = None) -> int:
    return exit_status(unfinished=unfinished, attempted=attempted, passed=passed, errors=errors, fail_under=fail_under)


def test_every_attempted_unit_passed_is_0() -> None:
    assert _status() == EXIT_OK


def test_nothing_attempted_without_a_threshold_is_0() -> None:
    # Every unit skipped (the phone lacks what the tasks need): nothing failed; the report says why.
    assert _status(attempted=0, passed=0) == EXIT_OK


def test_one_failure_is_1() -> None:
    assert _status(passed=9) == EXIT_FAILED


def test_infrastructure_errors_are_5_even_when_the_rest_passed() -> None:
    assert _status(passed=9, errors=1) == EXIT_INFRA


def test_infrastructure_errors_are_5_even_above_the_threshold() -> None:
    assert _status(passed=9, errors=1, fail_under=0.5) == EXIT_INFRA


def test_unfinished_units_come_before_everything() -> None:
    assert _status(unfinished=1, passed=0, errors=3, fail_under=0.9) == EXIT_UNFINISHED


def test_failures_at_or_above_the_threshold_are_accepted() -> None:
    assert _status(passed=8, fail_under=0.8) == EXIT_OK
    assert _status(passed=9, fail_under=0.8) == EXIT_OK


def test_below_the_threshold_is_4() -> None:
    assert _status(passed=7, fail_under=0.8) == EXIT_BELOW


def test_a_rate_a_hair_below_the_threshold_is_4() -> None:
    # 2/3 is below 0.667 even though it prints as 66.7 %.
    assert _status(attempted=3, passed=2, fail_under=0.667) == EXIT_BELOW


def test_nothing_attempted_with_a_threshold_is_4() -> None:
    # No rate cannot meet a threshold: a CI gate must not pass on a run that measured nothing.
    assert _status(attempted=0, passed=0, fail_under=0.1) == EXIT_BELOW


def test_statuses_are_distinct_from_each_other_and_from_bad_input_internal_and_interrupted() -> None:
    from farm.exits import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED

    codes = [EXIT_OK, EXIT_FAILED, EXIT_UNFINISHED, EXIT_BELOW, EXIT_INFRA, EXIT_BAD_INPUT, EXIT_INTERNAL,
             EXIT_INTERRUPTED]
    assert len(set(codes)) == len(codes)
