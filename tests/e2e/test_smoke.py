"""End-to-end smoke test against a real cluster (the local one, brought up on demand).

The two checks issue #2 names: plain LWS identity on fake GPU nodes, and Kueue gang admission
leaving a whole group gated when quota covers only one group. These are harness self-tests of the
bring-up; the catalogued requirements they touch are proven by suites/ (LWS-NAME-*, KUEUE-GANG-*).
"""

from __future__ import annotations

import pytest

from lws_conformance import checks
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster


def test_lws_groups_come_up_named_on_fake_gpu_nodes(scenario: Scenario) -> None:
    checks.lws_groups_named_on_gpu_nodes(scenario)


def test_kueue_admits_one_whole_group_and_gates_the_other(scenario: Scenario, unique: str) -> None:
    checks.kueue_admits_one_group_gates_other(scenario, unique)
