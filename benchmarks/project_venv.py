"""The project's virtualenv for the benchmark runners, also from a git worktree.

The runners (benchmarks/*/run, benchmarks/mutants/schemata) need the project's venv: PyYAML, the
Kubernetes client and `lwsc`. That is the checkout's `.venv`; a git worktree has none of its own,
so the main checkout's serves it (the parent of `git rev-parse --git-common-dir`). Whichever venv
runs, the worktree's own code comes first: on this process's path here, and on every child
`lwsc`'s through `benchlib.harness_env`. Standard library only: it runs before the re-exec, under
whatever Python started the runner.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def venv_bin(project: Path) -> Path:
    """The bin directory of `project`'s venv: its own `.venv`, else (a git worktree) the main
    checkout's; the checkout's own path when neither exists (its absence is reported by the
    first command that needs it)."""
    own = project / ".venv" / "bin"
    if (own / "python").is_file():
        return own
    common = subprocess.run(
        ["git", "-C", str(project), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    shared = Path(common).parent / ".venv" / "bin" if common else own
    return shared if (shared / "python").is_file() else own


def reexec(script: str, marker: str) -> Path:
    """Re-execute the runner `script` (benchmarks/<dir>/<name>) with the project venv's Python
    unless it runs there already (`marker`: the environment variable that says it was re-executed),
    then put the checkout's root first on the path; return the venv's bin directory."""
    project = Path(script).resolve().parents[2]
    python = venv_bin(project) / "python"
    if Path(sys.executable).resolve() != python.resolve() and python.is_file() and marker not in os.environ:
        os.environ[marker] = "1"
        os.execv(str(python), [str(python), str(Path(script).resolve()), *sys.argv[1:]])
    sys.path.insert(0, str(project))  # this checkout's lws_conformance, also from a git worktree
    return venv_bin(project)
