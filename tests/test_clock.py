"""k8s.clock: waiting for the API server's clock to leave a creationTimestamp's second."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from lws_conformance.k8s import clock


def _reads(*stamps: str) -> Callable[[], datetime]:
    seen = [clock.parse_stamp(s) for s in stamps]
    return lambda: seen.pop(0)


def test_a_server_already_past_the_second_costs_no_pause() -> None:
    paused: list[float] = []
    got = clock.wait_past(None, "2026-12-03T11:53:47Z", now=_reads("2026-12-03T11:53:48Z"), pause=paused.append)  # type: ignore[arg-type]
    assert paused == [] and got == datetime(2026, 12, 3, 11, 53, 48, tzinfo=UTC)


def test_a_server_inside_the_second_is_past_it_one_second_later() -> None:
    paused: list[float] = []
    reads = _reads("2026-12-03T11:53:47Z", "2026-12-03T11:53:48Z")
    got = clock.wait_past(None, "2026-12-03T11:53:47Z", now=reads, pause=paused.append)  # type: ignore[arg-type]
    assert paused == [clock.SECOND] and got.second == 48


def test_a_clock_that_does_not_advance_is_an_error_naming_both_readings() -> None:
    reads = _reads("2026-12-03T11:53:47Z", "2026-12-03T11:53:47Z")
    with pytest.raises(RuntimeError, match=r"reads 2026-12-03T11:53:47\+00:00 .* within 2026-12-03T11:53:47\+00:00"):
        clock.wait_past(None, "2026-12-03T11:53:47Z", now=reads, pause=lambda _s: None)  # type: ignore[arg-type]


def test_next_local_second_pauses_for_the_rest_of_the_current_second() -> None:
    paused: list[float] = []
    clock.next_local_second(pause=paused.append, now=lambda: 1000.25)
    assert paused == [pytest.approx(0.75)]


class _Response:
    status = 200

    def __init__(self, date: str | None) -> None:
        self.date = date

    def read(self) -> None:
        pass

    def getheader(self, name: str) -> str | None:
        return self.date if name == "Date" else None


class _Api:
    def __init__(self, date: str | None) -> None:
        self.date = date

    def param_serialize(self, method: str, path: str, **_kw: object) -> tuple[str, str, dict[str, str], None, None]:
        return method, "https://127.0.0.1" + path, {}, None, None

    def call_api(self, method: str, url: str, header_params: dict[str, str]) -> _Response:
        assert (method, url) == ("GET", "https://127.0.0.1/version")
        return _Response(self.date)


def test_the_server_clock_is_its_date_header() -> None:
    got = clock.server_second(_Api("Thu, 03 Dec 2026 11:53:47 GMT"))  # type: ignore[arg-type]
    assert got == datetime(2026, 12, 3, 11, 53, 47, tzinfo=UTC)


def test_an_answer_without_a_date_header_says_so() -> None:
    with pytest.raises(RuntimeError, match="no Date header"):
        clock.server_second(_Api(None))  # type: ignore[arg-type]
