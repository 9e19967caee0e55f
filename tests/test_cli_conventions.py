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


def _kubeconfig(path: Path, context: str, server: str, current: bool = True) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        + (f"current-context: {context}\n" if current else "")
        + f"clusters: [{{name: {context}-c, cluster: {{server: '{server}'}}}}]\n"
        f"contexts: [{{name: {context}, context: {{cluster: {context}-c, user: {context}-u}}}}]\n"
        f"users: [{{name: {context}-u, user: {{token: t}}}}]\n"
    )
    return path


def test_kubeconfig_env_is_honoured_for_the_existing_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every $KUBECONFIG entry is merged as kubectl merges them (the first current-context wins);
    an entry that does not exist is skipped; a harness cluster stays the harness's."""
    a = _kubeconfig(tmp_path / "a", "a-ctx", "https://a.example:6443")
    b = _kubeconfig(tmp_path / "b", "b-ctx", "https://b.example:6443")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(a), str(tmp_path / "gone"), str(b)]))

    def choice(argv: list[str]) -> object:
        return cli._choice(cli.resolve(_args(argv)))  # type: ignore[arg-type]

    merged = choice(["--provider", "existing", "run"]).target  # type: ignore[attr-defined]
    assert (merged.files, merged.context, merged.server) == ((a, b), "a-ctx", "https://a.example:6443")
    only_b = choice(["--provider", "existing", "run", "--context", "b-ctx"])
    assert only_b.target.server == "https://b.example:6443"  # type: ignore[attr-defined]
    assert only_b.why == "$KUBECONFIG with --provider existing"  # type: ignore[attr-defined]
    given = choice(["run", "--kubeconfig", str(b)]).target  # type: ignore[attr-defined]
    assert (given.files, given.chosen_by) == ((b,), "--kubeconfig")
    assert choice(["run"]).provider == "local"  # type: ignore[attr-defined]  # local stays local


def test_focus_selecting_nothing_is_exit_2_before_any_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "LWSC_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", "run", "--name", "h17-nothing", "--focus", "NO-SUCH-REQ"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
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
