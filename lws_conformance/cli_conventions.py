"""Command-line conventions shared by every `lwsc` subcommand (kept out of cli.py):

- global flags (--profile, --set, --name, --provider, ...) are accepted after the subcommand too
  (`lwsc run --name x` = `lwsc --name x run`; --set given on both sides adds up);
- `KUBECONFIG` is honoured where a kubeconfig is expected and none was given, every entry merged
  as kubectl merges them (`providers.existing.resolve`, docs/providers.md);
- `--focus`/`--skip` that select nothing end in exit 2 before any cluster is brought up;
- subcommand help shows examples.
"""

from __future__ import annotations

import argparse
import sys

from . import resources
from .errors import UserError
from .selection import collect_only

GLOBAL_FLAGS = ("--profile", "--set", "--name", "--provider", "--kind-bin", "--docker-bin", "--kubectl-bin")
LATE_SET = "set_after_command"
EXAMPLES = {
    "up": ["lwsc --name dev up", "lwsc up --name dev --set network.base_port=17000"],
    "down": ["lwsc down --name dev"],
    "status": ["lwsc status --name dev", "lwsc status --output json"],
    "run": [
        "lwsc run --focus LWS-NAME",
        "lwsc run --certify --product-metadata vendor.yaml",
        "lwsc run --kubeconfig ~/.kube/config --context prod   # a cluster you run",
        "lwsc --provider existing run                          # uses $KUBECONFIG",
    ],
    "preflight": ["lwsc preflight --kubeconfig ~/.kube/config --output json"],
    "discover": ["lwsc discover --kubeconfig ~/.kube/config -o my-profile.yaml"],
    "cleanup": ["lwsc cleanup --all --kubeconfig ~/.kube/config"],
    "report": ["lwsc report reports/latest"],
    "matrix": ["lwsc matrix --lws v0.8.0,v0.9.0 --focus 'LWS-NAME or LWS-VALID'"],
    "bisect": [
        "lwsc bisect --component lws --git LWS.git --good v0.10.0 --bad main --requirement ROLL-KEEP-001 --fixed",
        "lwsc bisect --component lws --git LWS.git --good v0.9.0 --bad my-branch --focus LWS-NAME --tries 3",
    ],
}


def add_late_globals(root: argparse.ArgumentParser, sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Copy the root parser's global flags onto every subcommand (SUPPRESSed defaults, so a flag
    not repeated keeps the value given before the subcommand) and add the examples epilogs."""
    actions = {a.option_strings[0]: a for a in root._actions if a.option_strings}
    actions = {flag: a for flag, a in actions.items() if flag in GLOBAL_FLAGS}
    for name, parser in sub.choices.items():
        shown = parser.add_argument_group("global options (also accepted before the subcommand)")
        for flag, action in actions.items():
            if any(flag in a.option_strings for a in parser._actions):
                continue
            kwargs: dict[str, object] = {"default": argparse.SUPPRESS, "help": action.help}
            if action.choices:
                kwargs["choices"] = action.choices
            if action.metavar:
                kwargs["metavar"] = action.metavar
            if flag == "--set":
                shown.add_argument(flag, action="append", dest=LATE_SET, **kwargs)  # type: ignore[arg-type]
            else:
                shown.add_argument(flag, dest=action.dest, **kwargs)  # type: ignore[arg-type]
        if name in EXAMPLES and not parser.epilog:
            parser.epilog = "examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES[name])
            parser.formatter_class = argparse.RawDescriptionHelpFormatter


def finish(args: argparse.Namespace) -> argparse.Namespace:
    """The parsed command line as `cli.resolve` reads it: --set values given after the subcommand
    add to those before it."""
    late = getattr(args, LATE_SET, None)
    if late:
        args.set = [*args.set, *late]
    if hasattr(args, LATE_SET):
        delattr(args, LATE_SET)
    return args


def check_selection(selection: list[str]) -> None:
    """Exit 2 (UserError) when a --focus/--skip expression selects no test (pytest collect-only
    returns 5), before anything is brought up."""
    if not selection:
        return
    cmd = [sys.executable, "-m", "pytest", str(resources.suites()), "--collect-only", "-q", "-p", "no:cacheprovider"]
    proc = collect_only([*cmd, *selection])
    if proc.returncode == 5:
        raise UserError(f"--focus/--skip selects no test (-k {selection[-1]!r}); list them with `lwsc run --dry-run`")
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["?"]
        raise UserError(f"--focus/--skip is not a valid pytest -k expression: {tail[0]}")


EPILOG = """exit codes:
  0  every applicable MUST requirement that ran passed (other commands: success)
  1  a MUST requirement failed (with --certify also: errored, not run, partial, unaccepted known deviation)
  2  bad usage or configuration (one line naming the fix, before any long work)
  3  the harness or the infrastructure broke (a requirement in error)
  4  not conformant, listed upstream bugs only (0 with --accept-known-deviations)
  5  not finished (launch --wait reached --timeout; job-status, retrieve before the Job ended)

environment:
  KUBECONFIG              the cluster of discover/preflight/cleanup and the existing provider, every entry merged as
                          kubectl merges them (never ~/.kube/config unless named)
  LWSC_PROFILE            default --profile
  LWSC_CACHE_DIR          binaries, Go caches, snapshots (default ~/.cache/lws-conformance)
  LWSC_STATE_DIR          local clusters' state (default ~/.local/state/lws-conformance)
  LWSC_TIMEOUT_SCALE      multiplies every suite deadline and watched window (profile key timeouts.scale)
  LWSC_DOWNLOAD           off: build every binary from source, never download a release
  LWSC_DOWNLOAD_MIRROR    fetch release downloads from this mirror (air-gapped)
  LWSC_IMAGE_REGISTRY     pull the suites' test images from this registry (profile key images.registry)
  ARTIFACTS               where run directories go (default ./reports), as CI systems set it
  NO_COLOR                no colour on a terminal

shell completion: eval "$(lwsc completion bash)"
"""


def completion_script(root: argparse.ArgumentParser, sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> str:
    """A bash completion function for lwsc: subcommands, then each one's flags."""
    top = " ".join(o for a in root._actions for o in a.option_strings)
    cases = "\n".join(
        f'    {name}) opts="{" ".join(o for a in p._actions for o in a.option_strings)}" ;;'
        for name, p in sorted(sub.choices.items())
    )
    return f"""_lwsc() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} cmd="" opts="" w
  for w in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
    case "$w" in -*) ;; *) [ -z "$cmd" ] && cmd=$w ;; esac
  done
  case "$cmd" in
{cases}
    *) opts="{top} {" ".join(sorted(sub.choices))}" ;;
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}}
complete -o default -F _lwsc lwsc
"""
