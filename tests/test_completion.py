"""`lwsc completion bash|zsh|fish`: generated from lwsc's own parser (shtab), so a flag's value is
never taken for the subcommand and `--profile` completes the shipped profiles (no cluster)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lws_conformance import cli, cli_completion


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("completion") / "lwsc.bash"
    out.write_text(cli_completion.script(cli.parser(), "bash"))
    return out


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers for the last of `words` (the line typed so far), as it calls the function."""
    line = " ".join(words)
    quoted = " ".join(f"'{w}'" for w in words)
    probe = (
        f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; COMP_LINE='{line}'; "
        'COMP_POINT=${#COMP_LINE}; _shtab_lwsc; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    return subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()


def test_bash_completes_subcommands_flags_and_profiles(bash_script: Path) -> None:
    assert _complete(bash_script, "lwsc", "bis") == ["bisect"]
    assert "--focus" in _complete(bash_script, "lwsc", "run", "--fo")
    assert "--rerun-failed" in _complete(bash_script, "lwsc", "run", "--rer")
    assert _complete(bash_script, "lwsc", "--profile", "k") == ["kind"]
    assert _complete(bash_script, "lwsc", "run", "--profile", "") == cli_completion.profile_names()
    assert _complete(bash_script, "lwsc", "--profile", "kind", "ru") == ["run"]  # `kind` is not the subcommand
    assert _complete(bash_script, "lwsc", "--profile", "kind", "run", "--fo") == ["--focus"]
    assert _complete(bash_script, "lwsc", "completion", "") == ["bash", "zsh", "fish"]
    assert _complete(bash_script, "lwsc", "results", "--mode", "") == ["report", "detailed"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_name_every_subcommand_and_profile(shell: str, tmp_path: Path) -> None:
    text = cli_completion.script(cli.parser(), shell)
    for word in ("bisect", "results", "delete", "--rerun-failed", *cli_completion.profile_names()):
        assert word in text, word
    binary = shutil.which(shell)
    if binary:  # the shell parses it (CI installs neither; checked where they are)
        path = tmp_path / f"lwsc.{shell}"
        path.write_text(text)
        check = subprocess.run([binary, "-n", str(path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr


def test_an_unknown_shell_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["completion", "tcsh"])
    assert exit_info.value.code == 2 and "invalid choice: 'tcsh'" in capsys.readouterr().err


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed")
def test_fish_completes_after_a_profile(tmp_path: Path) -> None:
    path = tmp_path / "lwsc.fish"
    path.write_text(cli_completion.script(cli.parser(), "fish"))

    def offered(line: str) -> list[str]:
        out = subprocess.run(["fish", "-c", f"source {path}; complete -C '{line}'"], capture_output=True, text=True)
        return [row.split("\t")[0] for row in out.stdout.splitlines()]

    assert offered("lwsc --profile kind ru") == ["run"]
    assert offered("lwsc --profile ") == cli_completion.profile_names()
