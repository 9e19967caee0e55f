"""`lwsc report --merge DIR...`: the run directories of shards (`lwsc run --shard K/N` on several
machines) joined into one run directory, judged by the same verdict rules as one run would be.

What each shard recorded (results.json: every test's per-requirement outcomes and phase times) is
concatenated; the summary, PRODUCT.yaml and HTML are rendered from it as for any run; the JUnit
files' test suites and the e2e logs are joined. The shards must have run the same versions,
provider, profile and gate, and no test twice.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ..errors import UserError

SAME = ("versions", "provider", "profile", "mode", "gate")


def _load(run_dir: Path) -> dict[str, Any]:
    f = run_dir / "results.json"
    if not f.is_file():
        raise UserError(f"{run_dir} has no results.json; give run directories of `lwsc run --shard K/N`")
    doc: dict[str, Any] = json.loads(f.read_text())
    return doc


def results(dirs: list[Path]) -> dict[str, Any]:
    """The merged results.json document."""
    if len(dirs) < 2:
        raise UserError("--merge needs at least two run directories")
    docs = [_load(d) for d in dirs]
    first = docs[0]
    for d, doc in zip(dirs[1:], docs[1:], strict=True):
        for key in SAME:
            if doc.get(key) != first.get(key):
                raise UserError(f"{d} ran with another {key} ({doc.get(key)!r}) than {dirs[0]} ({first.get(key)!r})")
    seen: dict[str, Path] = {}
    merged_results, timeline = [], []
    for d, doc in zip(dirs, docs, strict=True):
        label = doc.get("shard") or d.name
        for r in doc.get("results", []):
            if r["nodeid"] in seen:
                raise UserError(f"{r['nodeid']} ran in {seen[r['nodeid']]} and in {d}: the shards overlap")
            seen[r["nodeid"]] = d
            merged_results.append(r)
        timeline += [{**e, "worker": f"{label}:{e['worker']}"} for e in doc.get("timeline", [])]
    return {
        **{k: v for k, v in first.items() if k not in ("results", "timeline", "shard")},
        "run_id": f"merged-{time.strftime('%Y%m%d-%H%M%S')}",
        "merged_from": [{"dir": str(d), "run_id": doc.get("run_id"), "shard": doc.get("shard", "")}
                        for d, doc in zip(dirs, docs, strict=True)],
        "started": min(str(doc.get("started", "")) for doc in docs),
        "finished": max(str(doc.get("finished", "")) for doc in docs),
        "results": merged_results,
        "timeline": timeline,
    }


def junit(dirs: list[Path], out: Path) -> None:
    """One junit_01.xml with every shard's test suites."""
    root = ET.Element("testsuites")
    for d in dirs:
        f = d / "junit_01.xml"
        if not f.is_file():
            continue
        top = ET.parse(f).getroot()
        for suite in [top] if top.tag == "testsuite" else list(top):
            root.append(suite)
    ET.ElementTree(root).write(out / "junit_01.xml", encoding="utf-8", xml_declaration=True)


def logs(dirs: list[Path], out: Path) -> None:
    with (out / "e2e.log").open("w") as fh:
        for d in dirs:
            f = d / "e2e.log"
            fh.write(f"===== {d} =====\n")
            fh.write(f.read_text() if f.is_file() else "(no e2e.log)\n")
