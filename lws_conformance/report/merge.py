"""`lwsc report --merge DIR...`: the run directories of shards (`lwsc run --shard K/N` on several
machines) joined into one run directory, judged by the same verdict rules as one run would be.

A merge is a gate's verdict, so it refuses (exit 3, one line naming the shard) anything less than
the whole run: shards 1..N each present exactly once, cut from the same selection (count and digest
of the selected tests) and run with the same versions, provider, profile, mode, gate and harness
commit, each of them whole (pytest finished, every collected test judged: `completeness`), and
together covering the selection. What each shard recorded (results.json: every test's
per-requirement outcomes and phase times) is then concatenated; the summary, PRODUCT.yaml and HTML
are rendered from it as for any run; the JUnit files' test suites and the e2e logs are joined.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .. import shards
from ..errors import InfraError, UserError
from . import completeness

SAME = ("versions", "provider", "profile", "mode", "gate", "selection")
RECORDED = ("shard", "pytest_exit", "collected", "selection", "unjudged")  # what a whole shard records


class IncompleteMerge(InfraError):
    """The shards given are not the whole run: the merge would conclude on less than it claims (exit 3)."""


def _load(run_dir: Path) -> dict[str, Any]:
    f = run_dir / "results.json"
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a directory; give run directories of `lwsc run --shard K/N`")
    if not f.is_file():
        raise IncompleteMerge(f"{run_dir} has no results.json: that shard's run did not finish; re-run it")
    doc: dict[str, Any] = json.loads(f.read_text())
    missing = [k for k in RECORDED if k not in doc or (k == "shard" and not doc[k])]
    if missing:
        what = "is no shard (run without --shard K/N)" if "shard" in missing else f"records no {', '.join(missing)}"
        raise IncompleteMerge(f"{run_dir} {what}: give the run directories of one `lwsc run --shard K/N` gate")
    return doc


def _whole(dirs: list[Path], docs: list[dict[str, Any]]) -> None:
    """IncompleteMerge unless shards 1..N of one selection are each given once, each whole, and
    together cover the selection."""
    by_k: dict[int, Path] = {}
    n = shards.parse(str(docs[0]["shard"]))[1]
    for d, doc in zip(dirs, docs, strict=True):
        k, n_here = shards.parse(str(doc["shard"]))
        if n_here != n:
            raise IncompleteMerge(f"{d} is shard {k}/{n_here}, {dirs[0]} one of {n}: shards of one gate share N")
        if k in by_k:
            raise IncompleteMerge(f"shard {k}/{n} given twice ({by_k[k]} and {d})")
        by_k[k] = d
        gaps = completeness.gaps(doc)
        if gaps:
            raise IncompleteMerge(f"shard {k}/{n} ({d}) is not whole: {'; '.join(gaps)}")
    absent = [f"{k}/{n}" for k in range(1, n + 1) if k not in by_k]
    if absent:
        raise IncompleteMerge(
            f"shard {', '.join(absent)} missing: the merge needs the run directories of shards 1..{n}"
        )
    for d, doc in zip(dirs[1:], docs[1:], strict=True):
        for key in SAME:
            if doc.get(key) != docs[0].get(key):
                raise IncompleteMerge(
                    f"{d} ran with another {key} ({doc.get(key)!r}) than {dirs[0]} ({docs[0].get(key)!r})"
                )
        if doc["harness"].get("commit") != docs[0]["harness"].get("commit"):
            raise IncompleteMerge(f"{d} ran another harness commit than {dirs[0]}: shards of one gate run one commit")
    seen: dict[str, Path] = {}
    for d, doc in zip(dirs, docs, strict=True):
        for nodeid in doc["collected"]:
            if nodeid in seen:
                raise IncompleteMerge(f"{nodeid} ran in {seen[nodeid]} and in {d}: the shards overlap")
            seen[nodeid] = d
    want = int(docs[0]["selection"]["count"])
    if len(seen) != want:
        raise IncompleteMerge(f"the shards collected {len(seen)} tests of the {want} selected: a shard lost tests")


def results(dirs: list[Path]) -> dict[str, Any]:
    """The merged results.json document (IncompleteMerge unless the shards are the whole run)."""
    if not dirs:
        raise UserError("--merge needs the run directories of shards 1..N")
    docs = [_load(d) for d in dirs]
    _whole(dirs, docs)
    first = docs[0]
    merged_results, timeline = [], []
    for doc in docs:
        label = doc["shard"]
        merged_results += doc.get("results", [])
        timeline += [{**e, "worker": f"{label}:{e['worker']}"} for e in doc.get("timeline", [])]
    return {
        **{k: v for k, v in first.items() if k not in ("results", "timeline", "shard", "collected")},
        "collected": [i for doc in docs for i in doc["collected"]],
        "pytest_exit": 1 if any(int(doc["pytest_exit"]) == 1 for doc in docs) else 0,  # every shard is whole
        "unjudged": {},
        "run_id": f"merged-{time.strftime('%Y%m%d-%H%M%S')}",
        "merged_from": [
            {"dir": str(d), "run_id": doc.get("run_id"), "shard": doc.get("shard", "")}
            for d, doc in zip(dirs, docs, strict=True)
        ],
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
