"""Fixtures shared by the harness's own tests."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest


@pytest.fixture
def sigint_is_ctrl_c() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt during the test, as in an interactive shell. A process
    started in the background by a non-interactive shell inherits SIGINT *ignored*, and Python
    keeps that, so a test that presses Ctrl-C with `raise_signal(SIGINT)` would see nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
