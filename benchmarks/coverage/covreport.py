"""Coverage of the LWS and Kueue controllers under the suites: the pure part of benchmarks/coverage/run.

Input: `go tool covdata textfmt` profiles (one per requirement family, and their union), whose
lines are `<import path>/<file>.go:L1.C1,L2.C2 <statements> <count>`. Output: statements covered
per file and per package, the lines each family reaches (what benchmarks/mutation/run selects
tests by), the functions of the promise-bearing packages no test reaches, and an SVG of every
file's lines (covered, not covered, no statement).
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

# Modules whose coverage is reported, and the packages where the promises the suites check live.
MODULES = {"lws": "sigs.k8s.io/lws", "kueue": "sigs.k8s.io/kueue"}
PROMISE_PACKAGES = {
    "lws": (
        "pkg/controllers",
        "pkg/controllers/disaggregatedset",
        "pkg/webhooks",
        "pkg/webhooks/disaggregatedset",
        "pkg/utils",
        "pkg/utils/pod",
        "pkg/utils/revision",
        "pkg/utils/statefulset",
        "pkg/utils/controller",
        "pkg/utils/accelerators",
        "pkg/utils/disaggregatedset",
    ),
    "kueue": (
        "pkg/controller/jobs/leaderworkerset",
        "pkg/controller/jobs/pod",
        "pkg/controller/jobframework",
        "pkg/controller/tas",
        "pkg/cache/scheduler",
        "pkg/webhooks",
    ),
}
# Kueue packages whose unreached functions the Markdown summary names one by one (the LWS path).
NAMED_KUEUE_PACKAGES = ("pkg/controller/jobs/leaderworkerset", "pkg/controller/jobs/pod", "pkg/controller/tas")
_LINE = re.compile(r"^(?P<file>.+\.go):(?P<sl>\d+)\.(?P<sc>\d+),(?P<el>\d+)\.(?P<ec>\d+) (?P<n>\d+) (?P<count>\d+)$")


@dataclass(frozen=True)
class Block:
    file: str  # import path of the file, e.g. sigs.k8s.io/lws/pkg/webhooks/pod_webhook.go
    start: int
    end: int
    statements: int
    count: int


def parse_textfmt(text: str) -> list[Block]:
    """The blocks of a textfmt profile; a block listed twice (several inputs) counts once, with
    the sum of its counts."""
    merged: dict[tuple[str, int, int, int, int], list[int]] = {}
    for raw in text.splitlines():
        m = _LINE.match(raw.strip())
        if not m:
            continue
        key = (m["file"], int(m["sl"]), int(m["sc"]), int(m["el"]), int(m["ec"]))
        entry = merged.setdefault(key, [int(m["n"]), 0])
        entry[1] += int(m["count"])
    return [Block(k[0], k[1], k[3], n, c) for k, (n, c) in sorted(merged.items())]


def split_module(path: str) -> tuple[str, str] | None:
    """(component, path inside the module) of a profile's file, None outside LWS and Kueue."""
    for component, module in MODULES.items():
        if path.startswith(module + "/"):
            return component, path[len(module) + 1 :]
    return None


def package_of(rel: str) -> str:
    return str(PurePosixPath(rel).parent)


@dataclass
class FileCoverage:
    statements: int = 0
    covered: int = 0
    covered_lines: set[int] | None = None
    uncovered_lines: set[int] | None = None

    def __post_init__(self) -> None:
        self.covered_lines = set() if self.covered_lines is None else self.covered_lines
        self.uncovered_lines = set() if self.uncovered_lines is None else self.uncovered_lines


def by_file(blocks: Iterable[Block]) -> dict[tuple[str, str], FileCoverage]:
    """(component, file in module) -> statements, covered statements, and line sets. A line is
    covered when a block spanning it ran; uncovered when only blocks that never ran span it."""
    out: dict[tuple[str, str], FileCoverage] = {}
    for b in blocks:
        where = split_module(b.file)
        if where is None:
            continue
        fc = out.setdefault(where, FileCoverage())
        fc.statements += b.statements
        lines = set(range(b.start, b.end + 1))
        assert fc.covered_lines is not None and fc.uncovered_lines is not None
        if b.count > 0:
            fc.covered += b.statements
            fc.covered_lines |= lines
        else:
            fc.uncovered_lines |= lines
    for fc in out.values():
        assert fc.covered_lines is not None and fc.uncovered_lines is not None
        fc.uncovered_lines -= fc.covered_lines
    return out


def pct(covered: int, total: int) -> float:
    return round(100.0 * covered / total, 1) if total else 0.0


def ranges(lines: Iterable[int]) -> list[list[int]]:
    """Sorted lines as [first, last] runs: [1, 2, 3, 7] -> [[1, 3], [7, 7]]."""
    out: list[list[int]] = []
    for n in sorted(set(lines)):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def expand(runs: Iterable[Iterable[int]]) -> set[int]:
    out: set[int] = set()
    for first, last in runs:
        out.update(range(first, last + 1))
    return out


def package_table(files: dict[tuple[str, str], FileCoverage]) -> list[dict[str, Any]]:
    agg: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for (component, rel), fc in files.items():
        a = agg[(component, package_of(rel))]
        a[0] += fc.statements
        a[1] += fc.covered
        a[2] += 1
    rows = []
    for (component, pkg), (total, cov, nfiles) in sorted(agg.items()):
        rows.append(
            {
                "component": component,
                "package": pkg,
                "files": nfiles,
                "statements": total,
                "covered": cov,
                "percent": pct(cov, total),
                "promise_bearing": pkg in PROMISE_PACKAGES.get(component, ()),
            }
        )
    return rows


def uncovered_functions(
    files: dict[tuple[str, str], FileCoverage], funcs: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Functions of the promise-bearing packages (`funcs`: component -> mutation-gen -funcs rows)
    with statements and none of them covered, or covered in part (with the share)."""
    out = []
    for component, rows in funcs.items():
        for row in rows:
            rel = row["file"]
            if package_of(rel) not in PROMISE_PACKAGES.get(component, ()):
                continue
            fc = files.get((component, rel))
            if fc is None:
                continue
            assert fc.covered_lines is not None and fc.uncovered_lines is not None
            span = set(range(int(row["line"]), int(row["end_line"]) + 1))
            cov, unc = len(span & fc.covered_lines), len(span & fc.uncovered_lines)
            if unc and not cov:
                state = "not reached"
            elif unc:
                state = "partly reached"
            else:
                continue
            out.append(
                {
                    "component": component,
                    "file": rel,
                    "func": row["func"],
                    "line": row["line"],
                    "state": state,
                    "uncovered_lines": unc,
                    "covered_lines": cov,
                }
            )
    return sorted(out, key=lambda r: (r["component"], r["file"], r["line"]))


def report(
    total: list[Block],
    families: dict[str, list[Block]],
    funcs: dict[str, list[dict[str, Any]]],
    meta: dict[str, Any],
) -> dict[str, Any]:
    """The results document: per package, per file (with per-family covered statements and
    the covered and uncovered line runs), the uncovered functions, and the families' runs."""
    files = by_file(total)
    fam_files = {name: by_file(blocks) for name, blocks in families.items()}
    file_rows = []
    for (component, rel), fc in sorted(files.items()):
        assert fc.covered_lines is not None and fc.uncovered_lines is not None
        row: dict[str, Any] = {
            "component": component,
            "file": rel,
            "package": package_of(rel),
            "statements": fc.statements,
            "covered": fc.covered,
            "percent": pct(fc.covered, fc.statements),
        }
        file_rows.append(row)
        if package_of(rel) not in PROMISE_PACKAGES.get(component, ()):
            continue  # the rest of the module: counts only
        reached = {name: ff[(component, rel)] for name, ff in sorted(fam_files.items()) if (component, rel) in ff}
        reached = {name: f for name, f in reached.items() if f.covered}
        row["by_family"] = {name: f.covered for name, f in reached.items()}
        row["covered_lines"] = ranges(fc.covered_lines)
        row["uncovered_lines"] = ranges(fc.uncovered_lines)
        row["family_lines"] = {name: ranges(f.covered_lines or ()) for name, f in reached.items()}
    comp_rows = {}
    for component in MODULES:
        rows = [r for r in file_rows if r["component"] == component]
        promised = [r for r in rows if r["package"] in PROMISE_PACKAGES[component]]
        comp_rows[component] = {
            "statements": sum(r["statements"] for r in rows),
            "covered": sum(r["covered"] for r in rows),
            "percent": pct(sum(r["covered"] for r in rows), sum(r["statements"] for r in rows)),
            "promise_statements": sum(r["statements"] for r in promised),
            "promise_covered": sum(r["covered"] for r in promised),
            "promise_percent": pct(sum(r["covered"] for r in promised), sum(r["statements"] for r in promised)),
        }
    return {
        **meta,
        "components": comp_rows,
        "packages": package_table(files),
        "files": file_rows,
        "uncovered_functions": uncovered_functions(files, funcs),
    }


# -- pictures -----------------------------------------------------------------------------------
def svg(doc: dict[str, Any], line_count: dict[tuple[str, str], int]) -> str:
    """One row per file of the promise-bearing packages: its lines left to right, green where a
    test ran them, red where statements no test ran, grey without statements; the covered share
    and the statement counts at the right."""
    rows = [r for r in doc["files"] if r["package"] in PROMISE_PACKAGES.get(r["component"], ()) and r["statements"]]
    width, label_w, bar_w, row_h = 1180, 470, 560, 14
    height = 60 + row_h * len(rows) + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="10">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="18" font-size="13">Lines of LWS {html.escape(doc.get("versions", {}).get("lws", ""))} and '
        f"Kueue {html.escape(doc.get('versions', {}).get('kueue', ''))} the suites ran "
        f"(green: ran, red: statements never ran, grey: no statement)</text>",
        f'<text x="8" y="34">{html.escape(doc.get("recorded", ""))} · '
        f"commit {html.escape(doc.get('commit', ''))} · {html.escape(doc.get('machine', ''))}</text>",
    ]
    y = 50
    for r in rows:
        n = max(
            line_count.get((r["component"], r["file"]), 0),
            *(e for _, e in r["uncovered_lines"] or [[0, 0]]),
            *(e for _, e in r["covered_lines"] or [[0, 0]]),
            1,
        )
        scale = bar_w / n
        out.append(f'<text x="8" y="{y + 10}">{html.escape(r["component"] + " " + r["file"])}</text>')
        out.append(f'<rect x="{label_w}" y="{y + 2}" width="{bar_w}" height="{row_h - 4}" fill="#e4e4e4"/>')
        for colour, key in (("#d33", "uncovered_lines"), ("#3a3", "covered_lines")):
            for first, last in r[key]:
                x = label_w + (first - 1) * scale
                w = max((last - first + 1) * scale, 0.6)
                out.append(f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" fill="{colour}"/>')
        out.append(
            f'<text x="{label_w + bar_w + 8}" y="{y + 10}">{r["percent"]:5.1f}% of {r["statements"]} statements</text>'
        )
        y += row_h
    out.append(
        f'<text x="8" y="{y + 18}">one row per file, {len(rows)} files; a file\'s lines are scaled to the '
        f"bar's width</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def html_page(doc: dict[str, Any], picture: str) -> str:
    """The tables (components, packages, files by family, uncovered functions) and the picture."""
    fams = sorted({f for r in doc["files"] for f in r.get("by_family", {})})

    def table(head: list[str], body: list[list[Any]]) -> str:
        th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in body)
        return f"<table><tr>{th}</tr>{trs}</table>"

    comps = [
        [c, v["statements"], v["covered"], f"{v['percent']}%", f"{v['promise_percent']}%"]
        for c, v in doc["components"].items()
    ]
    pkgs = [
        [p["component"], p["package"], p["files"], p["statements"], p["covered"], f"{p['percent']}%"]
        for p in doc["packages"]
        if p["promise_bearing"]
    ]
    files = [
        [r["component"], r["file"], r["statements"], f"{r['percent']}%", *[r["by_family"].get(f, "") for f in fams]]
        for r in doc["files"]
        if r["package"] in PROMISE_PACKAGES.get(r["component"], ())
    ]
    funcs = [[u["component"], u["file"], u["func"], u["line"], u["state"]] for u in doc["uncovered_functions"]]
    style = (
        "body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}th{background:#eee}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>Controller coverage</title><style>{style}</style>"
        f"</head><body><h1>Controller coverage under the suites</h1><p>{html.escape(doc.get('recorded', ''))}, "
        f"commit {html.escape(doc.get('commit', ''))}, {html.escape(doc.get('machine', ''))}; "
        f"command <code>{html.escape(doc.get('command', ''))}</code></p>"
        "<h2>Components</h2>"
        + table(["component", "statements", "covered", "all packages", "promise-bearing packages"], comps)
        + "<h2>Promise-bearing packages</h2>"
        + table(["component", "package", "files", "statements", "covered", "percent"], pkgs)
        + "<h2>Files: covered statements per requirement family</h2>"
        + table(["component", "file", "statements", "percent", *fams], files)
        + "<h2>Functions no test reaches (fully or in part)</h2>"
        + table(["component", "file", "function", "line", "state"], funcs)
        + "<h2>Lines</h2>"
        + picture
        + "</body></html>\n"
    )


def markdown(doc: dict[str, Any]) -> str:
    """The summary for benchmarks/results: components, packages, the least covered files."""
    lines = [
        "# Controller coverage under the suites",
        "",
        f"Recorded {doc.get('recorded', '')}, commit {doc.get('commit', '')}, {doc.get('machine', '')}; "
        f"`{doc.get('command', '')}`. Statements of LWS {doc.get('versions', {}).get('lws', '')} and Kueue "
        f"{doc.get('versions', {}).get('kueue', '')} (Go coverage, `-covermode=atomic`) that ran while the suites ran.",
        "",
        "| component | statements | covered | all packages | promise-bearing packages |",
        "|---|---|---|---|---|",
    ]
    for c, v in doc["components"].items():
        lines.append(
            f"| {c} | {v['statements']} | {v['covered']} | {v['percent']}% | {v['promise_percent']}% "
            f"({v['promise_covered']}/{v['promise_statements']}) |"
        )
    lines += ["", "| component | package | statements | covered |", "|---|---|---|---|"]
    for p in doc["packages"]:
        if p["promise_bearing"]:
            lines.append(f"| {p['component']} | {p['package']} | {p['statements']} | {p['percent']}% |")
    fams = doc.get("families") or {}
    if fams:
        lines += [
            "",
            "| family (requirement catalogue) | requirements | tests' wall time | LWS covered | Kueue covered |",
            "|---|---|---|---|---|",
        ]
        for name, f in sorted(fams.items()):
            lines.append(
                f"| {name} | {f.get('requirements', '')} | {f.get('seconds', '')} s | "
                f"{f.get('percent', {}).get('lws', '')}% | {f.get('percent', {}).get('kueue', '')}% |"
            )
    lines += [
        "",
        "Functions of the promise-bearing packages no test reaches (all in the JSON, with those reached in part):",
        "",
    ]
    missed = [u for u in doc["uncovered_functions"] if u["state"] == "not reached"]
    for u in missed:
        if u["component"] == "lws" or package_of(u["file"]) in NAMED_KUEUE_PACKAGES:
            lines.append(f"- {u['component']} `{u['file']}` {u['func']} (line {u['line']})")
    for pkg in sorted({package_of(u["file"]) for u in missed if u["component"] == "kueue"} - set(NAMED_KUEUE_PACKAGES)):
        n = sum(u["component"] == "kueue" and package_of(u["file"]) == pkg for u in missed)
        lines.append(f"- kueue `{pkg}`: {n} functions (Kueue features the suites do not use)")
    return "\n".join(lines) + "\n"
