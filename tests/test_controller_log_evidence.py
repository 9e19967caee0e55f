"""Failure evidence reads a controller's log from where the test began, never the whole log."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from lws_conformance.k8s import logs
from lws_conformance.scenario import Scenario


def test_lines_since_reads_only_what_came_after_the_offset(tmp_path: Path) -> None:
    log = tmp_path / "lws.log"
    log.write_text("".join(f"before {i}\n" for i in range(50)))
    offset = logs.file_size(log)
    with log.open("a") as fh:
        fh.write("".join(f"during {i}\n" for i in range(300)))
    got = logs.lines_since(log, offset)
    assert got == [f"during {i}" for i in range(100, 300)]
    assert logs.lines_since(log, logs.file_size(log)) == []
    assert logs.file_size(tmp_path / "none.log") == 0 and logs.file_size(None) == 0


def test_a_long_log_is_read_from_its_last_mebibyte_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "TAIL_BYTES", 100)
    log = tmp_path / "kueue.log"
    log.write_text("".join(f"line {i:04d}\n" for i in range(1000)))  # 10 bytes a line
    got = logs.lines_since(log, 0, lines=50)
    assert got == [f"line {i:04d}" for i in range(990, 1000)]  # begun on a line boundary
    monkeypatch.setattr(logs, "TAIL_BYTES", 95)
    assert logs.lines_since(log, 0, lines=50) == [f"line {i:04d}" for i in range(991, 1000)]  # a partial one dropped


def test_a_scenario_notes_where_the_controller_logs_stood(tmp_path: Path) -> None:
    (tmp_path / "lws.log").write_text("x" * 123)

    class Handle:
        logs = {"lws": str(tmp_path / "lws.log"), "kueue": str(tmp_path / "missing.log"), "etcd": "/x"}

    sc = Scenario(client.ApiClient(), Handle(), "ns", None)  # type: ignore[arg-type]
    assert sc.log_offsets == {"lws": 123, "kueue": 0}


def test_json_log_records_from_an_offset(tmp_path: Path) -> None:
    log = tmp_path / "kueue.log"
    log.write_text('{"msg": "m", "n": 1}\n')
    offset = logs.file_size(log)
    with log.open("a") as fh:
        fh.write('not json m\n{"msg": "m", "n": 2}\n{"msg": "other"}\n')
    assert logs.json_log_records(log, "m") == [{"msg": "m", "n": 1}, {"msg": "m", "n": 2}]
    assert logs.json_log_records(log, "m", offset) == [{"msg": "m", "n": 2}]


@pytest.mark.parametrize("provider", ["kind", "existing"])
def test_a_controller_s_records_come_from_its_pods_log_on_kind(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On kind the controller runs in a pod: its records are read through pods/log (the Deployment
    the kind provider installs); on a provider the harness did not install, none are read."""
    read: list[tuple[str, str]] = []

    def pod_log(_api: client.ApiClient, namespace: str, deployment: str, container: str = "manager") -> str:
        read.append((namespace, deployment))
        return '{"msg": "m", "n": 1}\nplain m\n{"msg": "other"}\n{"msg": "m", "n": 2}'

    monkeypatch.setattr("lws_conformance.scenario.deployment_log", pod_log)

    class Handle:
        logs: dict[str, str] = {}

    handle = Handle()
    handle.provider = provider  # type: ignore[attr-defined]
    sc = Scenario(client.ApiClient(), handle, "ns", None)  # type: ignore[arg-type]
    got = sc.controller_log_records("kueue", "m")
    if provider == "kind":
        assert got == [{"msg": "m", "n": 1}, {"msg": "m", "n": 2}]
        assert read == [("kueue-system", "kueue-controller-manager")]
    else:
        assert got is None and read == []
