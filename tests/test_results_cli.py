"""`lwsc results`, `lwsc report ARCHIVE` and `lwsc run --rerun-failed`: a finished run read from its
directory or straight out of a tarball (never extracted); wrong input is one line, exit 2, nothing
written (no cluster)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from lws_conformance import cli_results
from lws_conformance.cli import main
from lws_conformance.errors import UserError
from lws_conformance.report import archive

from .test_report_page import fixture_run

HARNESS = {"version": "0.1.0", "commit": "abc"}


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("lwsc: error:"), err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    out = fixture_run(tmp_path / "src", mode="standard", gate={})  # ROLL-KEEP-001 failed: exit 1
    return out.rename(out.parent / "20261206-080000")


@pytest.fixture
def sealed(run: Path, tmp_path: Path) -> Path:
    """The run's results archive, alone in a directory of its own."""
    (tmp_path / "box").mkdir()
    return archive.write(run, tmp_path / "box" / "20261206-080000.tar.gz", HARNESS)


def _sonobuoy(run: Path, out: Path) -> Path:
    """A tarball laid out as `sonobuoy retrieve` writes it: the plugin's results (the reports
    directory: the run directory and its archive) under plugins/<plugin>/results/global/."""
    with tarfile.open(out, "w:gz") as tar:
        info = tarfile.TarInfo("meta/run.log")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"log"))
        tar.add(run, arcname=f"plugins/lws-conformance/results/global/{run.name}")
    return out


def test_results_prints_the_conclusion_and_what_did_not_pass(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["results", str(run)]) == 1  # the run's own code
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("not conformant: 1 MUST requirement(s) did not pass: ROLL-KEEP-001 failed")
    assert out[0].endswith("(exit 1)")
    assert "provider kind" in out[1] and "kueue v0.17.0" in out[1]
    listed = [ln.split()[:3] for ln in out if ln.startswith("  ")]
    assert listed == [
        ["failed", "MUST", "ROLL-KEEP-001"],
        ["known-deviation", "MUST", "ROLL-DSSTEP-001"],
        ["known-deviation", "SHOULD", "KUEUE-LONGNAME-001"],
    ]  # not the passed, not-run ones


def test_results_detailed_shows_every_requirement_with_its_tests(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["results", str(run), "--mode", "detailed"])
    out = capsys.readouterr().out
    assert "passed           MUST   LWS-NAME-001" in out and "not-run" in out
    assert "  test failed: suites/rollout/test_keep.py::test_keep" in out
    assert "  | group 1: " in out  # the whole detail, not its first line


def test_results_reads_archives_without_extracting_them(
    run: Path, sealed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(sealed.parent)
    expected = main(["results", str(run)]), capsys.readouterr().out.splitlines()
    assert main(["results", str(sealed)]) == expected[0]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == expected[1][0] and out[4:] == expected[1][4:]
    assert f"read from {sealed} (member lwsc-results-20261206-080000/); archive ok: run 20261206-080000" in out[2]
    sono = _sonobuoy(run, tmp_path / "box" / "202612060805_sonobuoy_0f3a.tar.gz")
    assert main(["results", str(sono)]) == expected[0]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == expected[1][0] and "member plugins/lws-conformance/results/global/20261206-080000/" in out[2]
    assert _files(sealed.parent) == sorted([sealed.name, sono.name])  # nothing extracted


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda d: d / "nope.tar.gz", "does not exist; give a reports/<run-id> directory or its .tar.gz"),
        (lambda d: (d / "x.tar.gz").write_bytes(b"not a tarball") and d / "x.tar.gz", "is not a readable tarball"),
        (lambda d: d, "has no summary.json; give a reports/<run-id> directory"),
    ],
)
def test_results_of_something_that_is_no_run_is_one_line(
    make: object, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    box = tmp_path / "box"
    box.mkdir()
    target = make(box)  # type: ignore[operator]
    before = _files(box)
    _one_line_error(main(["results", str(target)]), capsys.readouterr().err, needle)
    assert _files(box) == before


def test_a_tarball_without_a_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.tar.gz"
    with tarfile.open(other, "w:gz") as tar:
        info = tarfile.TarInfo("x/readme.txt")
        tar.addfile(info, io.BytesIO(b""))
    _one_line_error(main(["results", str(other)]), capsys.readouterr().err, "holds no run (no summary.json)")


def test_report_re_renders_an_archive_into_a_new_run_directory(
    run: Path, sealed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    assert main(["report", str(sealed), "--reports", str(reports)]) == 1
    out = reports / "20261206-080000"
    assert capsys.readouterr().out.strip() == str(out / "summary.md")
    assert (out / "index.html").is_file() and (out / "summary.md").read_text() == (run / "summary.md").read_text()
    # again: the directory exists; one line naming --out, nothing changed
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    _one_line_error(main(["report", str(sealed), "--reports", str(reports)]), capsys.readouterr().err, "--out DIR")
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before


def test_report_refuses_an_archive_that_does_not_match_its_manifest(
    run: Path, sealed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "results.json").write_text((run / "results.json").read_text().replace("passed", "failed", 1))
    tampered = tmp_path / "t.tar.gz"
    with tarfile.open(sealed) as src, tarfile.open(tampered, "w:gz") as dst:
        for m in src.getmembers():
            fh = src.extractfile(m)
            data = (run / "results.json").read_bytes() if m.name.endswith("/results.json") else fh.read() if fh else b""
            m.size = len(data)
            dst.addfile(m, io.BytesIO(data))
    code = main(["report", str(tampered), "--out", str(tmp_path / "out")])
    _one_line_error(code, capsys.readouterr().err, "does not match its manifest", "lwsc verify")
    assert not (tmp_path / "out").exists()


def test_rerun_failed_focuses_on_the_requirements_that_did_not_pass(run: Path, sealed: Path) -> None:
    for source in (run, sealed):
        focus = cli_results.rerun_focus(str(source), False)
        assert focus == "ROLL-KEEP-001 or ROLL-DSSTEP-001 or KUEUE-LONGNAME-001"
    assert cli_results.rerun_focus(None, "LWS-NAME") is None  # no --rerun-failed: --focus as given


def test_rerun_failed_refusals(run: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="drop --focus"):
        cli_results.rerun_focus(str(run), "LWS-NAME")
    with pytest.raises(UserError, match="--rerun-failed .* does not exist"):
        cli_results.rerun_focus(str(tmp_path / "gone"), False)
    green = fixture_run(tmp_path / "green")
    (green / "summary.json").write_text(
        (green / "summary.json").read_text().replace('"failed"', '"passed"').replace('"known-deviation"', '"passed"')
    )
    with pytest.raises(UserError, match="nothing to re-run"):
        cli_results.rerun_focus(str(green), False)


def test_run_rerun_failed_mistakes_are_one_line_before_any_run(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    code = main(["run", "--rerun-failed", str(run), "--focus", "X", "--reports", str(reports)])
    _one_line_error(code, capsys.readouterr().err, "--rerun-failed chooses the tests itself")
    code = main(["run", "--rerun-failed", str(tmp_path / "none"), "--reports", str(reports)])
    _one_line_error(code, capsys.readouterr().err, "--rerun-failed")
    assert not reports.exists()
