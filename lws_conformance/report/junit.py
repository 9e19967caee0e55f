"""junit_01.xml as CI systems show it: one test suite per lwsc suite, the requirement ids in each
test case's name, and for a failure the requirement's own verdict and message with the test's
file and line instead of the harness's traceback; a SHOULD warning or a known deviation (pytest's
xfail) carries its verdict and symptom instead of a bare "skipped".

pytest writes the file; `rewrite` turns it into this shape from the run's results (a rewritten
file is left as it is; the joined files of shards are regrouped).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

MARK = "lws-conformance"
SHOWN = ("failed", "error", "warning", "known-deviation", "deviation-fixed?")


def _nodeid_key(nodeid: str) -> tuple[str, str]:
    path, _, name = nodeid.partition("::")
    return path.removesuffix(".py").replace("/", "."), name


def _suite(classname: str) -> str:
    parts = classname.split(".")
    return parts[parts.index("suites") + 1] if "suites" in parts[:-1] else parts[0]


def _why(outcomes: dict[str, dict[str, str]], level: dict[str, str]) -> list[tuple[str, str]]:
    """(one line, detail) per requirement of the test whose verdict is not a plain pass."""
    out = []
    for rid, o in sorted(outcomes.items()):
        if o["verdict"] in SHOWN:
            detail = (o.get("detail") or "").strip()
            if o["verdict"] == "known-deviation":  # "<id>: <title> (<reference>)", a blank line, the failure
                detail = detail.partition("\n\n")[2] or detail
            first = detail.splitlines()[:1] or [""]
            dev = f" {o['deviation']}" if o.get("deviation") else ""
            out.append((f"{rid} {o['verdict']}{dev} ({level.get(rid, '?')}): {first[0][:200]}", o.get("detail", "")))
    return out


def rewrite(run_dir: Path, results: dict[str, Any], summary: dict[str, Any]) -> None:
    path = run_dir / "junit_01.xml"
    if not path.is_file():
        return
    root = ET.parse(path).getroot()
    if root.get("name") == MARK:
        return
    by_key = {_nodeid_key(r["nodeid"]): r for r in results.get("results", [])}
    where = {e["nodeid"]: e.get("location", "") for e in results.get("timeline", [])}
    level = {r["id"]: r["level"] for r in summary.get("requirements", [])}
    suites: dict[str, ET.Element] = {}
    cases = [c for s in ([root] if root.tag == "testsuite" else list(root)) for c in s.iter("testcase")]
    for case in cases:
        classname, name = case.get("classname", ""), case.get("name", "")
        if name.startswith("[") and "] " in name:  # already rewritten (a shard's file, merged)
            name = name.split("] ", 1)[1]
        rec = next((r for (mod, n), r in by_key.items() if n == name and classname.endswith(mod)), None)
        reqs = [p.get("value", "") for p in case.iter("property") if p.get("name") == "requirement"]
        if reqs:
            case.set("name", f"[{' '.join(dict.fromkeys(reqs))}] {name}")
        if rec is not None:
            shown = _why(rec.get("outcomes", {}), level)
            at = where.get(rec["nodeid"], "")
            for tag in ("failure", "error", "skipped"):
                for el in case.findall(tag):
                    if shown and not (tag == "skipped" and el.get("type") != "pytest.xfail"):
                        el.set("message", "; ".join(line for line, _d in shown))
                        el.text = "\n\n".join(d for _l, d in shown) + (f"\n\nat {at}" if at else "")
        suite = suites.setdefault(_suite(classname), ET.Element("testsuite", name=f"lwsc.{_suite(classname)}"))
        suite.append(case)
    top = ET.Element("testsuites", name=MARK)
    for _name, suite in sorted(suites.items()):
        kids = list(suite)
        suite.set("tests", str(len(kids)))
        for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            suite.set(attr, str(sum(1 for c in kids if c.find(tag) is not None)))
        suite.set("time", f"{sum(float(c.get('time') or 0) for c in kids):.3f}")
        top.append(suite)
    ET.ElementTree(top).write(path, encoding="utf-8", xml_declaration=True)
