"""Shards (`lwsc run --shard K/N`) and their merge (`lwsc report --merge`): every test exactly once,
balanced by recorded durations, the same verdicts as one run."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lws_conformance import cli, plugin, shards
from lws_conformance.errors import UserError
from lws_conformance.report import merge


def test_every_test_lands_in_exactly_one_shard_longest_first() -> None:
    ids = [f"t{i}" for i in range(10)]
    recorded = {"t0": 60.0, "t1": 50.0, "t2": 10.0, "t3": 10.0, "t4": 10.0}
    parts = shards.assign(ids, 3, recorded)
    assert sorted(i for p in parts for i in p) == sorted(ids)
    assert parts == shards.assign(list(ids), 3, dict(recorded))  # deterministic
    totals = [sum(recorded.get(i, 10.0) for i in p) for p in parts]  # the unrecorded count as the median, 10
    assert max(totals) - min(totals) <= 10.0, totals
    assert "t0" in parts[0] and "t1" in parts[1]
    assert shards.assign(ids, 1, {}) == [ids]


def test_longest_recorded_first_ties_in_the_given_order() -> None:
    ids = ["a", "b", "c", "d", "e"]
    recorded = {"c": 70.0, "e": 5.0, "d": 3.0, "a": 1.0}
    assert shards.longest_first(ids, recorded) == ["c", "e", "b", "d", "a"]  # b: the median, 4
    assert shards.longest_first(ids, {"c": 2.0}) == ["a", "b", "c", "d", "e"]  # all equal: as given
    assert shards.longest_first(ids, {}) == ids


def test_a_run_hands_the_longest_recorded_test_out_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makepyfile(test_order="def test_quick(): pass\ndef test_slow(): pass\ndef test_mid(): pass\n")
    recorded = tmp_path / "durations.json"
    recorded.write_text(json.dumps({"test_order.py::test_slow": 70.0, "test_order.py::test_mid": 9.0,
                                    "test_order.py::test_quick": 0.5}))  # fmt: skip
    monkeypatch.setattr(shards, "DURATIONS", recorded)
    ordered = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    assert [ln for ln in ordered.outlines if "::" in ln] == [
        "test_order.py::test_slow", "test_order.py::test_mid", "test_order.py::test_quick"]  # fmt: skip
    collected = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider", "--lwsc-order=collected")
    assert [ln for ln in collected.outlines if "::" in ln][0] == "test_order.py::test_quick"


def test_tests_on_the_workers_private_cluster_go_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makepyfile(test_order="""
import pytest
def test_quick(): pass
def test_breaks(private_scenario): pass
@pytest.mark.private_cluster("kueue.manage_jobs_without_queue_name=true")
def test_own(private_scenario): pass
def test_slow(): pass
""")  # fmt: skip
    recorded = tmp_path / "durations.json"
    seconds = {"quick": 0.5, "breaks": 1.0, "own": 50.0, "slow": 70.0}
    recorded.write_text(json.dumps({f"test_order.py::test_{k}": v for k, v in seconds.items()}))
    monkeypatch.setattr(shards, "DURATIONS", recorded)
    ordered = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    assert [ln.split("::")[1] for ln in ordered.outlines if "::" in ln] == [
        "test_breaks", "test_slow", "test_own", "test_quick"]  # fmt: skip


def test_the_workers_private_cluster_is_shared_then_brought_down(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []

    @contextlib.contextmanager
    def fake_private(config: object, name: str) -> Iterator[str]:
        events.append(f"up {name}")
        yield f"cluster {len(events)}"
        events.append(f"down {name}")

    monkeypatch.setattr(plugin, "_private", fake_private)
    holder = plugin._WorkerPrivate()
    first = holder.get(None, "p")  # type: ignore[arg-type]
    assert holder.get(None, "p") is first and events == ["up p"]  # type: ignore[arg-type]
    holder.release()
    holder.release()  # nothing left to bring down
    assert events == ["up p", "down p"]
    assert holder.get(None, "p") != first and events[-1] == "up p"  # type: ignore[arg-type]


def test_a_bad_shard_is_one_line() -> None:
    assert shards.parse("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "a/b", "3", ""):
        with pytest.raises(UserError, match="--shard must look like K/N"):
            shards.parse(bad)


TESTS = """
import pytest

@pytest.mark.requirement("LWS-NAME-001")
@pytest.mark.parametrize("i", range(3))
def test_names(i):
    pass

@pytest.mark.requirement("LWS-NAME-004")
def test_sts_names():
    pass

@pytest.mark.requirement("ROLL-SURGE-001")
def test_surge():
    assert False, "3 groups live, maxSurge 1"
"""


def _run(pytester: pytest.Pytester, out: Path, *args: str) -> dict[str, str]:
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        "--lwsc-run-id=t1",
        f"--lwsc-report-dir={out}",
        f"--junitxml={out / 'junit_01.xml'}",
        *args,
    )
    assert result.ret in (0, 1), result.stdout.str()
    return {
        r["id"]: r["verdict"]
        for r in json.loads((out / "summary.json").read_text())["requirements"]
        if r["verdict"] != "not-run"
    }


@pytest.mark.usefixtures("plugin_pytester")
def test_shards_merged_read_as_the_unsharded_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_s=TESTS)
    whole = _run(pytester, tmp_path / "whole")
    parts = [tmp_path / f"shard{k}" for k in (1, 2, 3)]
    ran = [_run(pytester, d, f"--lwsc-shard={k}/3") for k, d in enumerate(parts, 1)]
    nodeids = [[r["nodeid"] for r in json.loads((d / "results.json").read_text())["results"]] for d in parts]
    assert sorted(i for n in nodeids for i in n) == sorted(
        r["nodeid"] for r in json.loads((tmp_path / "whole" / "results.json").read_text())["results"]
    )
    assert all(nodeids) and all(ran)
    out = tmp_path / "merged"
    code = cli.main(["report", "--merge", *map(str, parts), "--out", str(out)])
    doc = json.loads((out / "summary.json").read_text())
    assert {r["id"]: r["verdict"] for r in doc["requirements"] if r["verdict"] != "not-run"} == whole
    assert whole["ROLL-SURGE-001"] == "failed" and code == 1 == doc["conclusion"]["code"]
    assert len(doc["merged_from"]) == 3 and {w.split(":")[0] for w in doc["run_timeline"]["workers"]} == {
        "1/3",
        "2/3",
        "3/3",
    }
    assert (out / "junit_01.xml").read_text().count("<testcase") == 5
    with pytest.raises(merge.IncompleteMerge, match="shard 1/3 given twice"):
        merge.results([parts[0], parts[0], parts[2]])
    meta = json.loads((parts[1] / "results.json").read_text())
    (parts[1] / "results.json").write_text(json.dumps({**meta, "versions": {"lws": "v0.8.0"}}))
    with pytest.raises(merge.IncompleteMerge, match="ran with another versions"):
        merge.results(parts)
    for key, value in (("selection", {"count": 5, "digest": "0"}), ("harness", {"commit": "0" * 12})):
        (parts[1] / "results.json").write_text(json.dumps({**meta, key: value}))
        with pytest.raises(merge.IncompleteMerge, match=f"another {key if key != 'harness' else 'harness commit'}"):
            merge.results(parts)
    (parts[1] / "results.json").write_text(json.dumps({**meta, "collected": meta["collected"][1:]}))
    with pytest.raises(merge.IncompleteMerge, match="collected 4 tests of the 5 selected"):
        merge.results(parts)


def _merged(parts: list[Path], out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["report", "--merge", *map(str, parts), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and not out.exists(), err  # one line, nothing written
    return code, err[0]


@pytest.mark.usefixtures("plugin_pytester")
@pytest.mark.parametrize("accept", [False, True])
def test_a_merge_of_a_partial_gate_is_inconclusive(
    pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str], accept: bool
) -> None:
    """Two of three shards, a shard given twice or a shard of another gate never make a verdict:
    the merge refuses in one line (exit 3), also when the gate accepts known deviations."""
    pytester.makepyfile(test_s=TESTS.replace('assert False, "3 groups live, maxSurge 1"', "pass"))
    gate = ["--lwsc-accept-known-deviations"] if accept else []
    parts = [tmp_path / f"shard{k}" for k in (1, 2, 3)]
    for k, d in enumerate(parts, 1):
        _run(pytester, d, f"--lwsc-shard={k}/3", *gate)
    code, line = _merged(parts[:2], tmp_path / "m1", capsys)
    assert code == 3 and "shard 3/3 missing" in line
    code, line = _merged([parts[0], parts[2]], tmp_path / "m2", capsys)
    assert code == 3 and "shard 2/3 missing" in line
    (parts[2] / "results.json").unlink()  # a shard whose pytest was killed before it wrote its results
    code, line = _merged(parts, tmp_path / "m3", capsys)
    assert code == 3 and f"{parts[2]} has no results.json" in line
    assert cli.main(["report", "--merge", *map(str, parts[:2]), str(tmp_path / "whole")]) == 2  # not a directory


CRASH = TESTS.replace(
    "def test_sts_names():\n    pass",
    ("def test_sts_names():\n    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)  # the worker dies"),
)


@pytest.mark.usefixtures("plugin_pytester")
def test_a_killed_worker_reads_error_and_a_merge_with_its_shard_exit_3(
    pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A test whose xdist worker died ended without a verdict: its requirement reads error, the
    run is inconclusive (exit 3), and a merge that includes that shard refuses it."""
    pytester.makepyfile(test_s=CRASH.replace('assert False, "3 groups live, maxSurge 1"', "pass"))
    out = tmp_path / "whole"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "1",
        "--lwsc-run-id=t1",
        f"--lwsc-report-dir={out}",
        "--lwsc-accept-known-deviations",
    )
    doc = json.loads((out / "summary.json").read_text())
    assert "crashed" in result.stdout.str() and doc["conclusion"]["code"] == 3, doc["conclusion"]
    assert doc["conclusion"]["line"].startswith("inconclusive: 1 requirement(s) errored: LWS-NAME-004")
    row = next(r for r in doc["requirements"] if r["id"] == "LWS-NAME-004")
    assert row["verdict"] == "error" and "crashed while running 'test_s.py::test_sts_names'" in row["detail"]
    assert cli._exit_code(result.ret, out) == 3
    parts = [tmp_path / f"shard{k}" for k in (1, 2, 3)]
    for k, d in enumerate(parts, 1):
        pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-n", "1", "--lwsc-run-id=t1", f"--lwsc-report-dir={d}", f"--lwsc-shard={k}/3"
        )
    crashed = next(
        k
        for k, d in enumerate(parts, 1)
        if "test_s.py::test_sts_names" in json.loads((d / "results.json").read_text())["collected"]
    )
    code, line = _merged(parts, tmp_path / "merged", capsys)
    assert code == 3 and f"shard {crashed}/3 ({parts[crashed - 1]}) is not whole" in line
    assert "ended without a verdict, first test_s.py::test_sts_names" in line
