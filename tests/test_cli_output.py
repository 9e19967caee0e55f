"""Colour only on a terminal (and never with NO_COLOR); `discover --output json`."""

from __future__ import annotations

import io
import json
import types
from pathlib import Path

import pytest

from lws_conformance import cli
from lws_conformance.providers import existing


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(cli.sys, "stderr", io.StringIO())
    assert cli._paint("x", "31") == "x"
    monkeypatch.setattr(cli.sys, "stderr", _Tty())
    assert cli._paint("x", "31") == "\x1b[31mx\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli._paint("x", "31") == "x"


@pytest.fixture
def one_node_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lwsc discover` against a cluster of one node, without an API server."""
    node = {
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}},
    }
    monkeypatch.setattr(cli, "_api_for", lambda cfg: (existing.Target(Path("/k"), "c", "https://k"), {}))
    monkeypatch.setattr(cli, "api_client", lambda *a: types.SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(
        cli.client,
        "CoreV1Api",
        lambda api: types.SimpleNamespace(list_node=lambda: types.SimpleNamespace(items=[node])),
    )
    monkeypatch.setattr(cli, "to_dict", lambda api, n: n)
    monkeypatch.setattr(cli.preflight, "detect", lambda api, c, known: types.SimpleNamespace(version=None))


@pytest.mark.usefixtures("one_node_cluster")
def test_discover_output_json_prints_the_proposal_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.cmd_discover(cli.resolve(cli.parser().parse_args(["discover", "--output", "json"]))) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes_seen"] == 1 and isinstance(doc["profile"], dict)


@pytest.mark.usefixtures("one_node_cluster")
def test_discover_output_yaml_prints_to_stdout_and_writes_no_file_named_yaml(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.cmd_discover(cli.resolve(cli.parser().parse_args(["discover", "-o", "yaml"]))) == 0
    assert "topology:" in capsys.readouterr().out and not (tmp_path / "yaml").exists()


def test_help_lists_exit_codes_environment_and_each_subcommands_global_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = capsys.readouterr().out
    assert "exit codes:" in top and "  4  not conformant, listed upstream bugs only" in top
    assert "  5  not finished (launch --wait reached --timeout" in top
    assert "LWSC_CACHE_DIR" in top and "KUBECONFIG" in top and "lwsc completion bash" in top
    for command in ("run", "up", "preflight", "matrix", "bisect"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        text = capsys.readouterr().out
        assert "global options" in text and "--profile" in text and "--set KEY=VALUE" in text, command
