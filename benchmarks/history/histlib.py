"""The pure parts of the real-regression benchmark: the manifest of upstream fixes, the result of
a run against one of them, `--list`, results.md and the tables the docs show.

A fix is a bug-fix commit of LWS (v0.3.0..v0.9.0) or Kueue (v0.10.0..v0.17.0); its patch puts the
pre-fix behaviour back into the pinned source (the reverse diff of the fix where it applies, the
same logic adapted where the code moved since). A run compares each requirement's verdict with
the pinned run's (the coverage runs' verdicts, as the mutation benchmark does), through
mutlib.classify: a requirement red here and not there detects the bug.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

COMPONENTS = ("lws", "kueue")
# status of a fix with a result; a fix without one is "not run"
# detected-error: the patched controller exited while the cluster came up (the bring-up saw it die),
# or crashed while the tests ran (a Go crash traceback ends its log; `crash_of`)
DETECTED = ("detected-must", "detected-should", "detected-error")
JUDGED = (*DETECTED, "missed")
NOT_OBSERVABLE = "not-observable"
# inconclusive: what went red is only `error` (the harness could not tell): no verdict, as no-result
BROKEN = ("patch-failed", "build-failed", "no-result", "inconclusive")
STATUSES = (*JUDGED, NOT_OBSERVABLE, *BROKEN)
NOT_RUN = "not run"
_SHA = re.compile(r"^[0-9a-f]{40}$")
_URL = re.compile(r"^https://github\.com/kubernetes-sigs/(lws|kueue)/(pull|issues)/\d+$")
HOW = ("reverse", "adapted")


class ManifestError(ValueError):
    """The manifest names something wrong: the message says which entry and what to fix."""


@dataclass(frozen=True)
class Fix:
    id: str  # <component>-<short sha>
    component: str
    commit: str  # the upstream fix commit (40 hex digits)
    date: str  # its commit date, YYYY-MM-DD
    title: str  # its subject
    upstream: tuple[str, ...]  # PR / issue URLs
    patch: Path
    bug: str  # the behaviour the patch puts back, one sentence
    how: str  # reverse (the fix's reverse diff) | adapted (the same logic where the code moved)
    adapted: str = ""  # for `adapted`: what moved and how the patch follows it
    expect: tuple[str, ...] = ()  # requirements that could see it (the expectation, before a run)
    focus: str | None = None  # pytest -k expression of the suites that could see it
    not_observable: str = ""  # why no suite of the harness can see it here (recorded without a run)
    missed_reason: str = ""  # after a run that missed it: why (what would see it)
    full: bool = False  # in the sample that also gets a full run

    @property
    def short(self) -> str:
        return self.commit[:10] if self.component == "kueue" else self.commit[:7]

    def focus_expr(self) -> str | None:
        return self.focus or (" or ".join(self.expect) if self.expect else None)

    def packages(self) -> list[str]:
        """The Go package directories the patch changes (compiled before a run)."""
        dirs = []
        for line in self.patch.read_text().splitlines():
            if line.startswith("+++ b/") and line.endswith(".go"):
                d = str(Path(line[6:]).parent)
                if d not in dirs:
                    dirs.append(d)
        return dirs


def _words(x: object) -> str:
    return " ".join(str(x or "").split())


def load_manifest(
    path: Path, known_requirements: Iterable[str] | None = None
) -> tuple[dict[str, dict[str, str]], list[Fix]]:
    """(modules, fixes) of manifest.yaml; ManifestError naming the entry and the field when wrong."""
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ManifestError(f"{path} does not parse: {str(exc).splitlines()[0]}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("fixes"), list):
        raise ManifestError(f"{path}: needs `modules:` and a list `fixes:`")
    modules = doc.get("modules") or {}
    if set(modules) != set(COMPONENTS):
        raise ManifestError(f"{path}: modules must name exactly {', '.join(COMPONENTS)} (module, version)")
    known = set(known_requirements) if known_requirements is not None else None
    fixes: list[Fix] = []
    for k, raw in enumerate(doc["fixes"], start=1):
        where = f"{path.name}: entry {k} ({raw.get('id', 'no id') if isinstance(raw, dict) else raw!r})"
        if not isinstance(raw, dict):
            raise ManifestError(f"{where}: not a mapping")
        missing = [
            f
            for f in ("id", "component", "commit", "date", "title", "upstream", "patch", "bug", "how")
            if not raw.get(f)
        ]
        if missing:
            raise ManifestError(f"{where}: missing {', '.join(missing)}")
        comp, commit = str(raw["component"]), str(raw["commit"])
        if comp not in COMPONENTS:
            raise ManifestError(f"{where}: component must be one of {', '.join(COMPONENTS)}")
        if not _SHA.match(commit):
            raise ManifestError(f"{where}: commit must be the full 40-hex-digit sha")
        want = f"{comp}-{commit[: 10 if comp == 'kueue' else 7]}"
        if raw["id"] != want:
            raise ManifestError(f"{where}: id must be {want} (<component>-<short sha>)")
        if raw["how"] not in HOW:
            raise ManifestError(f"{where}: how must be one of {', '.join(HOW)}")
        if raw["how"] == "adapted" and not raw.get("adapted"):
            raise ManifestError(f"{where}: how: adapted needs `adapted:` (what moved, how the patch follows it)")
        upstream = tuple(str(u) for u in (raw["upstream"] if isinstance(raw["upstream"], list) else [raw["upstream"]]))
        bad = [u for u in upstream if not _URL.match(u)]
        if bad:
            raise ManifestError(f"{where}: upstream {bad[0]!r} is no kubernetes-sigs lws/kueue PR or issue URL")
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", str(raw["date"])):
            raise ManifestError(f"{where}: date must be YYYY-MM-DD")
        patch = (path.parent / str(raw["patch"])).resolve()
        if not patch.is_file():
            raise ManifestError(f"{where}: no patch file {raw['patch']}")
        expect = tuple(str(r) for r in raw.get("expect") or ())
        if known is not None:
            unknown = [r for r in expect if r not in known]
            if unknown:
                raise ManifestError(f"{where}: expect names unknown requirements {unknown}")
        if not expect and not raw.get("not_observable"):
            raise ManifestError(
                f"{where}: give `expect:` (requirements that could see it) or `not_observable:` (why none)"
            )
        fixes.append(
            Fix(
                id=str(raw["id"]),
                component=comp,
                commit=commit,
                date=str(raw["date"]),
                title=_words(raw["title"]),
                upstream=upstream,
                patch=patch,
                bug=_words(raw["bug"]),
                how=str(raw["how"]),
                adapted=_words(raw.get("adapted")),
                expect=expect,
                focus=_words(raw.get("focus")) or None,
                not_observable=_words(raw.get("not_observable")),
                missed_reason=_words(raw.get("missed_reason")),
                full=bool(raw.get("full")),
            )
        )
    ids = [f.id for f in fixes]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ManifestError(f"{path.name}: duplicate fix ids {dup}")
    return modules, fixes


# -- results ------------------------------------------------------------------------------------
@dataclass
class Result:
    id: str
    status: str
    mode: str = ""  # focused (the manifest's focus) | full (every suite)
    focus: str | None = None
    red: dict[str, str] = field(default_factory=dict)  # requirement -> its verdict, red here and not in the baseline
    levels: dict[str, str] = field(default_factory=dict)  # requirement -> MUST / SHOULD
    details: dict[str, str] = field(default_factory=dict)
    expected_hit: list[str] = field(default_factory=list)
    note: str = ""
    seconds: float = 0.0
    exit_code: int | None = None
    reports: str = ""
    recorded: str = ""  # when (ISO time)
    commit: str = ""  # the harness checkout's HEAD (full sha) whose code the run used
    dirty: bool = False  # that checkout differed from its HEAD while the run went on
    crash: str = ""  # the patched controller crashed mid-run: the harness's line saying so (`crash_of`)


def status_of(classified: str) -> str:
    """mutlib.classify's status of a run, in this benchmark's words. A run whose only red verdicts
    are `error` says the harness could not tell: inconclusive, neither detected nor missed."""
    return {"killed-must": "detected-must", "killed-should": "detected-should", "killed-error": "inconclusive"}.get(
        classified, "missed"
    )


# The harness's detail of a failure while a process of the local cluster under test was dead
# (lws_conformance.providers.health.dead_components): "...: <name> (pid N) is not running, its log
# ends: <last lines, joined by ' | '>", several dead processes joined by "; ".
_DEAD = re.compile(
    r"the cluster under test broke \(not an LWS/Kueue verdict\): (?:.*?; )?(?P<name>[\w-]+) \(pid \d+\) is not "
    r"running, its log ends: (?P<tail>[^\n]*)"
)
# What only a Go runtime crash (a panic or a fatal error) writes at the end of a process's output:
# its goroutine traceback, frames "path/file.go:N +0x1f" and "created by F in goroutine N". A kill
# from outside (SIGKILL, the OOM killer, a harness stopping it) leaves the log as it was.
_GO_CRASH = re.compile(r"\.go:\d+ \+0x[0-9a-f]+\b|\bcreated by \S+ in goroutine \d+\b|\bgoroutine \d+ \[")


def crash_of(details: dict[str, str], component: str) -> str:
    """The patched `component` crashed while the tests ran: the first of `details` (requirement ->
    the run's whole detail) in which the harness says it was not running and its log ends in a Go
    crash traceback, as '<requirement>: <that line>'; else "". Another process dead, or the
    component's log without a traceback (killed from outside), is no crash of the patch."""
    for req, detail in details.items():
        for m in _DEAD.finditer(detail or ""):
            if m.group("name") == component and _GO_CRASH.search(m.group("tail")):
                return f"{req}: {m.group(0)}"[:500]
    return ""


def reclassify(r: Result) -> Result:
    """A recorded run's status from its red verdicts and their levels, by the rules above (the
    bring-up's own error, the patched controller dying, stays detected-error; so do errors of a
    run in which the patched controller crashed, `crash`)."""
    if not r.red or "bring-up" in r.red or r.status not in (*JUDGED, "inconclusive"):
        return r
    if any(v == "failed" and r.levels.get(k) == "MUST" for k, v in r.red.items()):
        r.status = "detected-must"
    elif any(v in ("warning", "failed") for v in r.red.values()):
        r.status = "detected-should"
    elif r.crash:
        r.status = "detected-error"
    else:
        r.status = "inconclusive"
        first = next(iter(r.details.values()), "")
        r.note = r.note or f"only error verdicts ({len(r.red)}): {first}"[:300]
    return r


def record(
    fix: Fix, classified: str, red: dict[str, str], levels: dict[str, str], details: dict[str, str], **extra: Any
) -> Result:
    """The result of one run of `fix`, from mutlib.classify's (status, red requirements)."""
    res = Result(
        id=fix.id,
        status=status_of(classified),
        red=dict(red),
        levels={r: levels.get(r, "MUST") for r in red},
        details={r: details.get(r, "") for r in red},
        expected_hit=[r for r in red if r in fix.expect],
        **extra,
    )
    return reclassify(res)


def harness_summary(results: Iterable[Result]) -> str:
    """The harness commits the recorded results used, e.g. `1a2b3c4d5e6f (12 fixes), 7a8b9c0d1e2f
    dirty (1 fix)`, most used first."""
    seen: dict[str, int] = {}
    for r in results:
        key = (r.commit[:12] or "unknown") + (" dirty" if r.dirty else "")
        seen[key] = seen.get(key, 0) + 1
    ranked = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} ({n} fix{'es' if n > 1 else ''})" for k, n in ranked) or "none"


def result_from(raw: dict[str, Any]) -> Result:
    return Result(**{k: v for k, v in raw.items() if k in Result.__dataclass_fields__})


def by_level(r: Result) -> str:
    """'LWS-X-001 failed (MUST), ...' — what detected it, with the level."""
    return ", ".join(f"{rid} {v} ({r.levels.get(rid, '?')})" for rid, v in r.red.items()) or "—"


def result_text(r: Result | None) -> str:
    if r is None:
        return NOT_RUN
    if r.status in DETECTED:
        crashed = " (the patched controller crashed mid-run)" if r.crash and r.status == "detected-error" else ""
        return f"{r.status} by {by_level(r)}{crashed}"
    if r.status == NOT_OBSERVABLE:
        return f"{r.status}: {r.note}"
    if r.status == "inconclusive":
        return f"inconclusive ({r.mode} run; only error verdicts: {', '.join(r.red)}): {r.note}"
    if r.status in BROKEN:
        return f"{r.status}: {r.note}"
    return f"missed ({r.mode} run{': ' + r.note if r.note else ''})"


def list_lines(fixes: list[Fix], results: dict[str, Result], root: Path) -> list[str]:
    """`run --list`: each fix, its patch and its recorded result (or 'not run')."""
    out = []
    for f in fixes:
        patch = f.patch.relative_to(root) if f.patch.is_relative_to(root) else f.patch
        out.append(f"{f.id:<17} {f.date} {f.how:<7} {f.title}")
        out.append(f"{'':<17} patch {patch}; {', '.join(f.upstream)}")
        out.append(f"{'':<17} expect {', '.join(f.expect) or '—'}; result: {result_text(results.get(f.id))}")
    return out


def counts(fixes: list[Fix], results: dict[str, Result]) -> dict[str, int]:
    rs = [results[f.id] for f in fixes if f.id in results]
    return {
        "fixes": len(fixes),
        "detected": sum(r.status in DETECTED for r in rs),
        "detected_must": sum(r.status == "detected-must" for r in rs),
        "detected_should": sum(r.status == "detected-should" for r in rs),
        "detected_error": sum(r.status == "detected-error" for r in rs),
        "missed": sum(r.status == "missed" for r in rs),
        "not_observable": sum(r.status == NOT_OBSERVABLE for r in rs),
        "broken": sum(r.status in BROKEN for r in rs),
        "inconclusive": sum(r.status == "inconclusive" for r in rs),
        "not_run": len(fixes) - len(rs),
    }


def headline(c: dict[str, int]) -> str:
    judged = c["detected"] + c["missed"]
    return (
        f"{c['detected']} of {judged} real upstream regressions detected "
        f"({c['detected_must']} by a MUST, {c['detected_should']} by a SHOULD only, "
        f"{c['detected_error']} by the patched controller dying); "
        f"{c['not_observable']} not observable here, {c['broken']} without a verdict, "
        f"{c['not_run']} of {c['fixes']} not run yet"
    )


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def fix_rows(fixes: list[Fix], results: dict[str, Result]) -> list[dict[str, Any]]:
    """What the tables show of each fix (kept in results.json, so the docs render from it alone)."""
    return [
        {
            "id": f.id,
            "component": f.component,
            "commit": f.commit,
            "title": f.title,
            "upstream": list(f.upstream),
            "date": f.date,
            "bug": f.bug,
            "how": f.how,
            "patch": f.patch.name,
            "expect": list(f.expect),
            "status": results[f.id].status if f.id in results else NOT_RUN,
            "result": result_text(results.get(f.id)),
        }
        for f in fixes
    ]


def table(rows: list[dict[str, Any]], patch_dir: str = "patches/") -> list[str]:
    """One row per fix: upstream commit and PR, date, what the patch puts back, expectation, result."""
    lines = [
        "| fix | upstream | date | bug put back (patch) | could be seen by | result |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        refs = ", ".join(f"[{u.split('/')[-3]}#{u.rsplit('/', 1)[1]}]({u})" for u in r["upstream"])
        kind = "reverse diff" if r["how"] == "reverse" else "adapted"
        commit = f"[{r['commit'][:10]}](https://github.com/kubernetes-sigs/{r['component']}/commit/{r['commit']})"
        lines.append(
            f"| {r['id']} | {_cell(r['title'])} ({refs}; {commit}) | {r['date']} | {_cell(r['bug'])} "
            f"([{kind}]({patch_dir}{r['patch']})) | {', '.join(r['expect']) or '—'} | {_cell(r['result'])} |"
        )
    return lines


def docs_block(doc: dict[str, Any], patch_dir: str) -> str:
    """The docs' table (scripts/render-figures), from results.json alone."""
    lines = [
        f"**{doc['headline']}** ({doc.get('pinned', '')}; harness commits {doc.get('harness', '?')}, "
        f"{doc.get('machine', 'not recorded')}, updated {doc.get('updated', 'never')}).",
        "",
        *table(doc.get("fixes") or [], patch_dir),
        "",
        "Bugs fixed after the pinned versions that the pinned run shows:",
        "",
        *post_pin_lines(doc.get("post_pin") or [], doc.get("pinned_run")),
    ]
    return "\n".join(lines) + "\n"


def markdown(doc: dict[str, Any], fixes: list[Fix], results: dict[str, Result], post_pin: list[dict[str, str]]) -> str:
    c = counts(fixes, results)
    lines = [
        "# Real-regression benchmark results",
        "",
        f"Bug-fix commits of LWS ({doc.get('ranges', {}).get('lws', '')}) and Kueue "
        f"({doc.get('ranges', {}).get('kueue', '')}) on the paths the harness covers, each put back "
        f"into the pinned source ({doc.get('pinned', '')}) by a patch of `patches/`, built through "
        "`sources.<component>` and run against the suites that could see it. A fix is **detected** when "
        "a requirement is failed / warning / error in its run and not red in the pinned run "
        f"(the baseline: `{doc.get('baseline', '')}`).",
        "",
        f"**{headline(c)}.**",
        "",
        f"Runs: {doc.get('machine', 'not recorded')}, harness commits {harness_summary(results.values())} "
        "(the HEAD of the checkout whose code each run used; dirty: it differed from HEAD during the run), "
        f"updated {doc.get('updated', 'never')}.",
        "",
        *table(fix_rows(fixes, results)),
    ]
    adapted = [f for f in fixes if f.how == "adapted"]
    if adapted:
        lines += ["", "## Adapted patches", ""]
        lines += [f"- **{f.id}**: {f.adapted}" for f in adapted]
    missed = [f for f in fixes if f.id in results and results[f.id].status in ("missed", NOT_OBSERVABLE)]
    if missed:
        lines += ["", "## Missed or not observable, and why", ""]
        for f in missed:
            r = results[f.id]
            why = f.missed_reason or f.not_observable or r.note or "not analysed yet (add `missed_reason`)"
            lines.append(f"- **{f.id}** ({r.status}): {why}")
    red = [(f, results[f.id]) for f in fixes if f.id in results and results[f.id].red]
    if red:
        lines += ["", "## What went red", ""]
        for f, r in red:
            for rid, v in r.red.items():
                lines.append(f"- {f.id} {rid} {v} ({r.levels.get(rid, '?')}): {r.details.get(rid, '')}".rstrip(": "))
    lines += ["", "## Bugs fixed after the pinned versions that the pinned run shows", ""]
    lines += post_pin_lines(post_pin, doc.get("pinned_run"))
    return "\n".join(lines) + "\n"


def pinned_run_of(summary: dict[str, Any]) -> dict[str, Any]:
    """What results.json keeps of a full `lwsc run` on the pinned versions (its summary.json): run
    id, harness commit, versions, conclusion and each requirement's verdict and level, so the
    post-pin table renders from results.json alone."""
    reqs = summary.get("requirements") or []
    return {
        "run_id": str(summary.get("run_id", "")),
        "started": str(summary.get("started", "")),
        "commit": str((summary.get("harness") or {}).get("commit", "")),
        "versions": {c: v for c, v in (summary.get("versions") or {}).items() if c in COMPONENTS},
        "conclusion": str((summary.get("conclusion") or {}).get("line", "")),
        "verdicts": {str(r["id"]): str(r.get("verdict", "")) for r in reqs},
        "levels": {str(r["id"]): str(r.get("level", "")) for r in reqs},
    }


RED_VERDICTS = ("failed", "warning", "error")


def post_pin_lines(post_pin: list[dict[str, str]], pinned_run: dict[str, Any] | None = None) -> list[str]:
    """The bugs fixed upstream after the pinned versions (known deviations that affect them), each
    with its requirement's verdict in the pinned run when one is recorded; then what that run has
    red with no listed deviation."""
    if not post_pin:
        return ["None listed."]
    verdicts = (pinned_run or {}).get("verdicts") or {}
    out = [
        "Known deviations of `fixtures/known-deviations.yaml` that affect the pinned versions and are fixed "
        "upstream after them: where the pinned run shows one (every run for a deterministic one, some tries "
        "for a race, some cluster shapes for a conditional one) it reports `known-deviation`, its whole "
        "symptom matched; any other failure of the requirement stays `failed`.",
        "",
    ]
    if pinned_run:
        out += [
            f"Pinned run: `lwsc run` {pinned_run.get('run_id', '')} ({pinned_run.get('started', '')[:10]}, harness "
            f"commit {pinned_run.get('commit', '')[:12]}, "
            + ", ".join(f"{c} {v}" for c, v in (pinned_run.get("versions") or {}).items())
            + f"): {pinned_run.get('conclusion', '').split(':')[0] or 'no conclusion recorded'}.",
            "",
        ]
    head = "| deviation | requirement | component | kind | fixed in | upstream |"
    rule = "|---|---|---|---|---|---|"
    if pinned_run:
        head, rule = head + " pinned run |", rule + "---|"
    out += [head, rule]
    for d in post_pin:
        row = (
            f"| {d['id']} | {d['requirement']} | {d['component']} | {d.get('kind', '')} | {_cell(d['fixed'])} "
            f"| {_cell(d['upstream'])} |"
        )
        if pinned_run:
            row += f" {verdicts.get(d['requirement'], 'not in the run')} |"
        out.append(row)
    if pinned_run:
        listed = {d["requirement"] for d in post_pin}
        levels = pinned_run.get("levels") or {}
        red = [(r, v) for r, v in sorted(verdicts.items()) if v in RED_VERDICTS and r not in listed]
        out += [
            "",
            "Red in the pinned run with no listed deviation (a failure or warning no upstream fix is known for, "
            "or an error): " + (", ".join(f"{r} {v} ({levels.get(r, '?')})" for r, v in red) or "none") + ".",
        ]
    return out


def post_pin_fixed(deviations: Iterable[Any], pinned: dict[str, str]) -> list[dict[str, str]]:
    """The known deviations the pinned versions show and an upstream fix after them removes (a
    release `fixed`, or a merged PR on main), one row each."""
    out = []
    for d in deviations:
        if not d.affects(pinned):
            continue
        main = str(d.fixed_on_main or "")
        if d.fixed:
            where = ", ".join(d.fixed)
        elif main.startswith("https://"):
            where = "main: " + main
        else:
            continue
        out.append(
            {
                "id": d.id,
                "requirement": d.requirement,
                "component": d.component,
                "kind": d.kind,
                "fixed": where,
                "upstream": ", ".join(d.upstream) or d.report,
            }
        )
    return out
