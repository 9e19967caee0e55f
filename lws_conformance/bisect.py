"""`lwsc bisect`: from a red requirement to the upstream commit that broke (or fixed) it.

Git does the bisection: a bare clone of the given repository that shares its objects (`git clone
--bare --shared`, so the user's repository is never written) runs `git bisect start --no-checkout
--first-parent` between the two refs and proposes each candidate as BISECT_HEAD. For each one the
harness builds the component from that commit through `sources.<component>=CLONE@COMMIT` (the
source cache is keyed by commit, so a commit met again is not exported or built twice), then runs
only the selected tests on a local cluster of the step's own, reads the requirements' verdicts
from its summary.json, and answers git:

- regression mode (default): `bad` when a named requirement did not hold in any try (failed,
  warning, or known-deviation: the promise broke, listed or not); `good` when every try passed;
- `--fixed`: the terms are `broken`/`fixed`; `fixed` when every named requirement passed (or a
  listed deterministic deviation stopped reproducing: `deviation-fixed?`) in every try;
- `skip` when the build failed, the harness errored, or nothing could be concluded (error,
  not-run, partial, not-applicable: the commit predates the requirement) — never bad.

A listed race shows in some tries, never all: `--tries N` runs each step N times and one try
showing the failure makes the step bad (broken); N passing tries make it good (fixed).
The pure step logic (`judge`) is unit-tested; `run` drives git and lwsc.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import catalogue, gitsource
from .errors import UserError

Progress = Callable[[str], None]
BROKE = ("failed", "warning", "known-deviation")  # the promise did not hold in that try
HELD = ("passed", "deviation-fixed?")  # it held (a listed deterministic deviation stopped)
PR = re.compile(r"\(#(\d+)\)\s*$|Merge pull request #(\d+)")


@dataclass(frozen=True)
class Terms:
    old: str  # the earlier state, at --good
    new: str  # the later state, at --bad

    @staticmethod
    def of(fixed: bool) -> Terms:
        return Terms("broken", "fixed") if fixed else Terms("good", "bad")


@dataclass
class Try:
    verdicts: dict[str, str]  # requirement -> verdict ({} when the run wrote no summary)
    exit_code: int
    seconds: float


@dataclass
class Step:
    commit: str
    subject: str
    build_seconds: float
    tries: list[Try] = field(default_factory=list)
    answer: str = ""  # a term, or "skip"
    why: str = ""


def judge(tries: list[Try], requirements: list[str], fixed: bool) -> tuple[str, str]:
    """(answer, why) for one step: the answer is a term of `Terms.of(fixed)` or "skip"."""
    terms = Terms.of(fixed)
    conclusive = [t for t in tries if t.verdicts and all(t.verdicts.get(r) in (*BROKE, *HELD) for r in requirements)]
    if not conclusive:
        seen = "; ".join(", ".join(f"{r} {t.verdicts.get(r, 'no summary')}" for r in requirements) for t in tries)
        return "skip", f"nothing to conclude ({seen or 'no try ran'})"
    broke = [t for t in conclusive if any(t.verdicts[r] in BROKE for r in requirements)]
    if broke:
        names = sorted({f"{r} {t.verdicts[r]}" for t in broke for r in requirements if t.verdicts[r] in BROKE})
        answer = terms.old if fixed else terms.new
        return answer, f"did not hold in {len(broke)} of {len(conclusive)} tries: {', '.join(names)}"
    answer = terms.new if fixed else terms.old
    return answer, f"held in all {len(conclusive)} tries"


def pr_number(subject: str) -> str | None:
    m = PR.search(subject)
    return (m.group(1) or m.group(2)) if m else None


def _git(repo: Path, *args: str, check: bool = True) -> str:
    """`gitsource.git`, a failure being one line for the user."""
    try:
        return gitsource.git(repo, *args, check=check)
    except subprocess.CalledProcessError as exc:
        raise UserError(f"git {' '.join(args)} in {repo}: {(exc.stderr or exc.stdout).strip()[-300:]}") from None


@dataclass(frozen=True)
class Plan:
    component: str  # lws | kueue
    git: Path
    good: str
    bad: str
    requirements: list[str]
    focus: str
    tries: int
    fixed: bool
    reports: Path
    base_port: int
    lwsc_args: list[str]  # global lwsc options to pass on (--profile, --set)

    def validate(self) -> tuple[str, str]:
        """(good commit, bad commit); every mistake is one line (exit 2) before any build."""
        if self.component not in ("lws", "kueue"):
            raise UserError(f"--component must be lws or kueue, got {self.component!r}")
        if self.tries < 1:
            raise UserError(f"--tries must be at least 1, got {self.tries}")
        if not self.requirements and not self.focus:
            raise UserError("name what to check: --requirement ID [ID ...] and/or --focus EXPR")
        if not gitsource.is_git(self.git):
            raise UserError(f"--git {self.git} is not a git repository; pass the {self.component} repository")
        good, bad = gitsource.commit_of(self.git, self.good, "--good"), gitsource.commit_of(self.git, self.bad, "--bad")
        if subprocess.run(["git", "-C", str(self.git), "merge-base", "--is-ancestor", good, bad]).returncode:
            raise UserError(f"--good {self.good} is not an ancestor of --bad {self.bad}")
        return good, bad


@dataclass
class Result:
    plan: dict[str, object]
    steps: list[Step]
    first: str | None  # the first bad (or first fixed) commit
    subject: str = ""
    pr: str | None = None
    seconds: float = 0.0
    git_log: str = ""


def focus_expression(plan: Plan) -> str:
    """The pytest -k expression of a step's tests: --focus and the requirement ids."""
    parts = [f"({plan.focus})"] if plan.focus else []
    if plan.requirements:
        parts.append("(" + " or ".join(plan.requirements) + ")")
    return " and ".join(parts)


def _lwsc(plan: Plan, clone: Path, commit: str, *cmd: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "lws_conformance.cli",
        *plan.lwsc_args,
        "--name",
        f"bisect-{plan.base_port}",
        "--set",
        f"sources.{plan.component}={clone}@{commit}",
        "--set",
        f"network.base_port={plan.base_port}",
        *cmd,
    ]


def _step(plan: Plan, clone: Path, commit: str, out: Path, progress: Progress) -> Step:
    subject = _git(clone, "log", "-1", "--format=%s", commit)
    # the steps share one cluster name: whatever an interrupted step left of it goes first
    subprocess.run(_lwsc(plan, clone, commit, "down"), capture_output=True)
    started = time.monotonic()
    log = out / f"{commit[:12]}-build.log"
    with log.open("w") as fh:
        build = _lwsc(plan, clone, commit, "build", "--focus", focus_expression(plan))  # what the step's tests need
        built = subprocess.run(build, stdout=fh, stderr=subprocess.STDOUT)
    step = Step(commit, subject, round(time.monotonic() - started, 1))
    if built.returncode != 0:
        step.answer, step.why = "skip", f"build failed (exit {built.returncode}, log {log})"
        return step
    for n in range(plan.tries):
        t0 = time.monotonic()
        reports = out / f"{commit[:12]}-try{n + 1}"
        run = _lwsc(plan, clone, commit, "run", "--reports", str(reports), "--focus", focus_expression(plan))
        with (out / f"{commit[:12]}-try{n + 1}.log").open("w") as fh:
            code = subprocess.run(run, stdout=fh, stderr=subprocess.STDOUT).returncode
        summary = reports / "latest" / "summary.json"
        rows = json.loads(summary.read_text())["requirements"] if summary.is_file() else []
        wanted = plan.requirements or sorted({r["id"] for r in rows if r["verdict"] != "not-run"})
        verdicts = {r["id"]: r["verdict"] for r in rows if r["id"] in wanted}
        step.tries.append(Try(verdicts, code, round(time.monotonic() - t0, 1)))
        progress(f"  try {n + 1}/{plan.tries}: exit {code}, {', '.join(f'{k} {v}' for k, v in verdicts.items())}")
    required = plan.requirements or sorted({r for t in step.tries for r in t.verdicts})
    step.answer, step.why = judge(step.tries, required, plan.fixed)
    return step


StepFn = Callable[[Plan, Path, str, Path, Progress], Step]


def run(plan: Plan, progress: Progress, step_fn: StepFn | None = None) -> Result:
    """Bisect; `step_fn` builds and judges one commit (default: build it and run its tests)."""
    good, bad = plan.validate()
    terms = Terms.of(plan.fixed)
    started = time.monotonic()
    out = plan.reports / f"bisect-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lwsc-bisect-"))
    clone = work / "repo.git"
    steps: list[Step] = []
    try:
        _git(work, "clone", "--quiet", "--bare", "--shared", str(plan.git.resolve()), str(clone))
        count = _git(clone, "rev-list", "--first-parent", "--count", f"{good}..{bad}")
        progress(f"bisect {plan.component}: {count} first-parent commits from {plan.good} to {plan.bad}")
        _git(
            clone,
            "bisect",
            "start",
            "--no-checkout",
            "--first-parent",
            f"--term-old={terms.old}",
            f"--term-new={terms.new}",
            bad,
            good,
        )
        first: str | None = None
        while first is None:
            commit = _git(clone, "rev-parse", "BISECT_HEAD")
            progress(f"step {len(steps) + 1}: {commit[:12]} {_git(clone, 'log', '-1', '--format=%s', commit)}")
            step = (step_fn or _step)(plan, clone, commit, out, progress)
            steps.append(step)
            progress(f"  -> {step.answer} ({step.why}; build {step.build_seconds:.0f}s)")
            said = subprocess.run(
                ["git", "-C", str(clone), "bisect", step.answer, commit], capture_output=True, text=True
            )
            text = said.stdout + said.stderr
            m = re.search(r"^([0-9a-f]{40}) is the first (\S+) commit", text, re.M)
            if m:
                first = m.group(1)
            elif "There are only 'skip'ped commits left" in text or said.returncode != 0:
                progress(text.strip().splitlines()[-1] if text.strip() else "git bisect stopped")
                break
        log = _git(clone, "bisect", "log", check=False)
    finally:
        subprocess.run(["git", "-C", str(clone), "bisect", "reset"], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    subject = _git(plan.git, "log", "-1", "--format=%s", first) if first else ""
    result = Result(
        plan={**asdict(plan), "git": str(plan.git), "reports": str(plan.reports)},
        steps=steps,
        first=first,
        subject=subject,
        pr=pr_number(subject) if first else None,
        seconds=round(time.monotonic() - started, 1),
        git_log=log,
    )
    (out / "bisect.json").write_text(json.dumps(asdict(result), indent=2))
    (out / "report.md").write_text(report(plan, result, good, bad))
    progress(f"bisect report: {out / 'report.md'}")
    return result


def report(plan: Plan, result: Result, good: str, bad: str) -> str:
    """A ready-to-file upstream report (the layout of docs/upstream/*.md)."""
    terms = Terms.of(plan.fixed)
    repo = "kubernetes-sigs/lws" if plan.component == "lws" else "kubernetes-sigs/kueue"
    what = "was fixed" if plan.fixed else "broke"
    c = catalogue.default()
    reqs = ", ".join(plan.requirements) or f"the tests selected by --focus {plan.focus!r}"
    focus = focus_expression(plan)
    lines = [
        f"# {'Fixed' if plan.fixed else 'Regression'} in {repo}: {reqs}",
        "",
        f"Repository: {repo} · Between: {plan.good} ({good[:12]}) and {plan.bad} ({bad[:12]}) · "
        f"Found by `lwsc bisect` in {result.seconds / 60:.1f} min, {len(result.steps)} steps, "
        f"{plan.tries} tr{'y' if plan.tries == 1 else 'ies'} per step",
        "",
    ]
    if result.first:
        pr = f" (PR #{result.pr}: https://github.com/{repo}/pull/{result.pr})" if result.pr else ""
        lines += [f"## The first {terms.new} commit", "", f"`{result.first}` {result.subject}{pr}", ""]
    else:
        lines += ["## No single commit found", "", "Every remaining candidate was skipped (see the steps).", ""]
    lines += [
        "## Reproduce with lws-conformance",
        "```",
        f".venv/bin/lwsc --set sources.{plan.component}=<{plan.component} git dir>@{result.first or plan.bad} "
        f"run --focus {focus!r}",
        "```",
        "",
        "## Observed vs promised",
        *[f"- Promised ({c[r].level}, {r}): {c[r].statement}" for r in plan.requirements if r in c],
        f"- Observed: the promise {what} at the commit above: "
        + (
            "it holds there and did not at its first parent."
            if plan.fixed
            else "it does not hold there and held at its first parent."
        ),
        "",
        "## Steps",
        "| commit | subject | build s | tries (verdicts) | answer |",
        "|---|---|---|---|---|",
    ]
    for s in result.steps:
        tries = "; ".join(
            ", ".join(f"{k} {v}" for k, v in t.verdicts.items()) or f"exit {t.exit_code}" for t in s.tries
        )
        lines.append(f"| {s.commit[:12]} | {s.subject} | {s.build_seconds:.0f} | {tries} | {s.answer}: {s.why} |")
    lines += ["", "## git bisect log", "```", result.git_log, "```", ""]
    return "\n".join(lines)
