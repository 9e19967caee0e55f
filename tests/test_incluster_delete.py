"""`lwsc delete`'s mistakes are one line, exit 2, before the cluster is asked anything (no cluster;
tests/e2e/test_incluster_rbac.py deletes a launched runner on the real apiserver)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lws_conformance.cli import main


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--timeout", "soon"], "--timeout 'soon': give seconds or a duration"),
        (
            ["--kubeconfig", "/nonexistent/kubeconfig"],
            "kubeconfig /nonexistent/kubeconfig (--kubeconfig) does not exist",
        ),
        ([], "give --kubeconfig PATH (or set KUBECONFIG)"),
    ],
)
def test_delete_mistakes_are_one_line(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["delete", *args]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("lwsc: error:") and needle in err[0], err
    assert list(tmp_path.iterdir()) == []
