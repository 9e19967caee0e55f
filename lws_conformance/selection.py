"""What a run selects, found before anything is built or started: the tests --focus/--skip (pytest
-k) and --shard pick, the requirement ids they prove, and the private clusters and upgrade start
versions they bring up (`plugin.selection_needs`). One `pytest --collect-only` of the suites with
the run's profile; a selection of nothing, or one pytest cannot collect, is one line and exit 2;
a collection that does not end within COLLECT_TIMEOUT_S (an overloaded machine) is exit 3.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import resources
from .errors import InfraError, UserError
from .profile import RESOLVED_FILE, Profile

COLLECT_TIMEOUT_S = 300  # collecting every suite takes 2-5 s on an idle 2-core machine


def collect_only(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """`pytest --collect-only` of the suites; exit 3 (not a traceback) when it does not end in time."""
    try:
        return subprocess.run(cmd, cwd=resources.root(), capture_output=True, text=True, timeout=COLLECT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise InfraError(
            f"collecting the selected tests (pytest --collect-only) did not end within {COLLECT_TIMEOUT_S} s; "
            "the machine is too busy to run the suites: retry when it is less loaded"
        ) from None


@dataclass(frozen=True)
class Selection:
    tests: dict[str, list[str]]  # node id -> requirement ids it proves
    private: list[list[str]]  # KEY=VALUE settings of each private cluster the tests bring up
    upgrade_starts: list[tuple[str, str]]  # (component, version) an upgrade test starts under

    @property
    def requirements(self) -> list[str]:
        return sorted({rid for ids in self.tests.values() for rid in ids})


def keyword_args(focus: str | None, skip: str | None) -> list[str]:
    """Hydrophone-style selection mapped onto pytest: --focus/--skip are -k expressions
    (requirement ids are test keywords too, so `--focus LWS-NAME` works)."""
    parts = [f"({focus})"] if focus else []
    if skip:
        parts.append(f"not ({skip})")
    return ["-k", " and ".join(parts)] if parts else []


def collect(keywords: list[str], profile: Profile, shard: str | None = None) -> Selection:
    """The selected tests (of shard `shard`, K/N, when given) and what they need, collected with
    the run's resolved `profile` (its upgrade start versions parametrize tests)."""
    with tempfile.TemporaryDirectory(prefix="lwsc-selection-") as tmp:
        out = Path(tmp) / "selection.json"
        resolved = profile.write_resolved(Path(tmp) / RESOLVED_FILE)
        cmd = [sys.executable, "-m", "pytest", str(resources.suites()), "--collect-only", "-q"]
        cmd += ["-p", "no:cacheprovider", *keywords, f"--lwsc-resolved-profile={resolved}"]
        cmd += [*([f"--lwsc-shard={shard}"] if shard else []), f"--lwsc-selection-out={out}"]
        proc = collect_only(cmd)
        if proc.returncode == 5 and shard and collect(keywords, profile).tests:
            raise UserError(f"shard {shard} of this selection holds no test; use fewer shards (--shard K/N)")
        if proc.returncode == 5:
            expression = f" (-k {keywords[-1]!r})" if keywords else ""
            raise UserError(f"--focus/--skip selects no test{expression}; list them with `lwsc run --dry-run`")
        if proc.returncode != 0 or not out.is_file():
            lines = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines() if ln.strip()]
            tail = next((ln for ln in reversed(lines) if "rror" in ln), lines[-1] if lines else "?")
            raise UserError(
                f"the selection could not be collected (pytest exit {proc.returncode}: {tail.strip()[:200]}); "
                "check --focus/--skip"
            )
        doc = json.loads(out.read_text())
    return Selection(
        tests={str(k): [str(r) for r in v] for k, v in doc["tests"].items()},
        private=[[str(s) for s in settings] for settings in doc["private"]],
        upgrade_starts=[(str(c), str(v)) for c, v in doc["upgrade_starts"]],
    )
