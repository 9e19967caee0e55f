"""`lwsc completion bash|zsh|fish`: a completion script generated from lwsc's own argparse parser
(shtab), so every subcommand, flag and choice is completed as `lwsc` parses it (a flag's value
is never taken for a subcommand), and `--profile` completes the shipped profile names.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import resources

SHELLS = ("bash", "zsh", "fish")
INSTALL = {
    "bash": 'eval "$(lwsc completion bash)"   # e.g. in ~/.bashrc',
    "zsh": 'eval "$(lwsc completion zsh)"    # e.g. in ~/.zshrc, after compinit',
    "fish": "lwsc completion fish > ~/.config/fish/completions/lwsc.fish",
}


def profile_names() -> list[str]:
    """The profiles shipped in fixtures/profiles (a path to a profile file works as well)."""
    return sorted(p.stem for p in (resources.fixtures() / "profiles").glob("*.yaml"))


def _profiles() -> dict[str, Any]:
    words = " ".join(profile_names())
    return {
        "bash": "_lwsc_profiles",
        "zsh": f"(({words}))",
        "fish": f"(printf '%s\\n' {words})",
        "preamble": {"bash": f'_lwsc_profiles() {{\n  compgen -W "{words}" -- "$1"\n}}'},
    }


def _parsers(root: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [root]
    for action in root._actions:
        if isinstance(action, argparse._SubParsersAction):
            out += list(action.choices.values())
    return out


def script(root: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of `root` (lwsc's whole parser) for `shell`."""
    import shtab  # only here: nothing else of lwsc needs it

    profiles = _profiles()
    for parser in _parsers(root):
        for action in parser._actions:
            if "--profile" in action.option_strings:
                action.complete = profiles  # type: ignore[attr-defined]
            elif action.dest in ("kubeconfig", "product_metadata", "template", "into") and action.option_strings:
                action.complete = shtab.FILE  # type: ignore[attr-defined]
    text: str = shtab.complete(root, shell=shell)
    return text


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    comp = sub.add_parser(
        "completion",
        help='print a shell completion script: eval "$(lwsc completion bash)" (or zsh; fish: see --help)',
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="install:\n" + "\n".join(f"  {line}" for line in INSTALL.values()),
    )
    comp.add_argument("shell", choices=SHELLS)
