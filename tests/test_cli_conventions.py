"""CLI conventions: global flags after the subcommand, KUBECONFIG, a --focus that selects nothing
(exit 2, nothing brought up), SIGTERM stopping the pytest child, subcommand help with examples."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lws_conformance import cli, cli_conventions


def _args(argv: list[str]) -> object:
    return cli_conventions.finish(cli.parser().parse_args(argv))


def test_global_flags_after_the_subcommand() -> None:
    args = _args(["--set", "a=1", "--name", "first", "status", "--name", "x", "--set", "b=2", "--profile", "large"])
    assert (args.name, args.profile, args.set) == ("x", "large", ["a=1", "b=2"])  # type: ignore[attr-defined]
    before = _args(["--name", "first", "--provider", "kind", "status"])
    assert (before.name, before.provider, before.set) == ("first", "kind", [])  # type: ignore[attr-defined]
    with pytest.raises(SystemExit):
        _args(["run", "--provider", "nope"])  # choices still checked after the subcommand


def test_kubeconfig_env_is_honoured_for_the_existing_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"/tmp/a.kubeconfig{os.pathsep}/tmp/b.kubeconfig")
    assert _args(["--provider", "existing", "run"]).kubeconfig == "/tmp/a.kubeconfig"  # type: ignore[attr-defined]
    assert _args(["run", "--kubeconfig", "/x"]).kubeconfig == "/x"  # type: ignore[attr-defined]
    assert _args(["run"]).kubeconfig is None  # type: ignore[attr-defined]  # local stays local


def test_focus_selecting_nothing_is_exit_2_before_any_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "LWSC_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", "run", "--name", "h17-nothing", "--focus", "NO-SUCH-REQ"],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "lwsc: error: --focus/--skip selects no test (-k '(NO-SUCH-REQ)'); list them with `lwsc run --dry-run`"
    ]
    assert not (tmp_path / "reports").exists() and not (tmp_path / "state" / "h17-nothing").exists()


CHILD = textwrap.dedent(
    """
    import signal, sys, time
    def stop(*_):
        open(sys.argv[1], "w").write("interrupted")
        sys.exit(2)
    signal.signal(signal.SIGINT, stop)
    print("ready", flush=True)
    time.sleep(60)
    """
)


def test_sigterm_interrupts_the_pytest_child_and_waits_for_it(tmp_path: Path) -> None:
    marker, log = tmp_path / "child-stopped", tmp_path / "e2e.log"
    wrapper = (
        "import signal, sys; from pathlib import Path; from lws_conformance import cli; "
        "signal.signal(signal.SIGTERM, cli._sigterm); "
        f"cli._tee([sys.executable, '-c', {CHILD!r}, {str(marker)!r}], Path({str(log)!r}))"
    )
    cmd = [sys.executable, "-u", "-c", wrapper]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert marker.read_text() == "interrupted"  # the child got SIGINT (pytest: teardown, then exit)
    assert time.monotonic() - started < 20 and log.is_file()  # it waited for the child, not the grace period


@pytest.mark.parametrize("command", ["run", "status", "gen", "verify", "images"])
def test_subcommand_help_has_examples(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.parser().parse_args([command, "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and f"lwsc {command}" in out
