"""PRODUCT.yaml in the CNCF Kubernetes AI-conformance format, and a checker for that format.

The format is the checklist template of github.com/cncf/k8s-ai-conformance (docs/AIConformance-
<minor>.yaml: `metadata:` and `spec.<category>: [{id, description, level, status, evidence,
notes}]`) as its validator (scripts/validate.go) reads it. lws-conformance proves one checklist
item, `schedulingOrchestration/gang_scheduling` (KAR-0053): this file is that entry, with the
status derived from the run's gang-scheduling verdicts, for the vendor to merge into the
PRODUCT.yaml of their submission. Vendor metadata comes from a YAML file of the same keys
(`lwsc run --product-metadata FILE`, kept in the run directory as product-metadata.yaml);
what is not given stays a `[placeholder]`, which the checker reports as still to fill.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

CATEGORY, ITEM, KAR = "schedulingOrchestration", "gang_scheduling", "KAR-0053"
STATUSES = ("Implemented", "Not Implemented", "Partially Implemented", "N/A")
LEVELS = ("MUST", "SHOULD")
# Required metadata keys of the validator (repoUrl is optional); camelCase or snake_case.
METADATA = (
    "vendorName",
    "platformName",
    "platformVersion",
    "kubernetesVersion",
    "websiteUrl",
    "documentationUrl",
    "productLogoUrl",
    "description",
    "contactEmailAddress",
    "k8sConformanceUrl",
)
OPTIONAL_METADATA = ("repoUrl",)
K8S_CONFORMANCE_URL = re.compile(r"^https://github\.com/cncf/k8s-conformance/tree/(master|main)/v\d+\.\d+/[^/]+/?$")
LOGO_SUFFIXES = (".svg", ".eps", ".ai")
DESCRIPTION = (
    "The platform must allow for the installation and successful operation of at least one gang scheduling "
    "solution that ensures all-or-nothing scheduling for distributed AI workloads (e.g. Kueue, Volcano, etc.) "
    "To be conformant, the vendor must demonstrate that their platform can successfully run at least one such "
    "solution."
)
EVIDENCE = ("junit_01.xml", "e2e.log", "summary.json")  # files of the run directory, next to PRODUCT.yaml
METADATA_FILE = "product-metadata.yaml"
RUN_KEY = "lwsConformance"  # which run made the entry and whether it is for submission (ignored by the validator)
FILE_REF = "file://"  # the checklist's form of an automated test's evidence: file://<path>[#<test>]


def local_path(ref: str) -> str | None:
    """The file a local evidence reference names (`file://junit_01.xml#KUEUE-GANG-001` or a plain
    relative path), or None for an http(s) link."""
    if ref.startswith(("http://", "https://")):
        return None
    return ref.removeprefix(FILE_REF).partition("#")[0]


def for_submission(summary: dict[str, Any]) -> tuple[bool, str]:
    """Whether the run's entry may be submitted: only from `lwsc run --certify` that exited 0."""
    mode = str(summary.get("mode") or "standard")
    end = summary.get("conclusion") or {}
    code, line = end.get("code"), str(end.get("line") or "no conclusion recorded")
    if mode != "certify":
        return False, f"a {mode} run (exit {code}), not a certification run (`lwsc run --certify`)"
    if code != 0:
        return False, f"a certification run that did not pass (exit {code}: {line})"
    return True, "a certification run that passed (exit 0)"


def evidence(rows: list[dict[str, Any]]) -> list[str]:
    """The run's evidence in the checklist's form: the junit test cases of each gang-scheduling
    requirement that ran (their names carry the requirement id), the log and the summary."""
    gang = [
        r["id"]
        for r in rows
        if r["id"].startswith("KUEUE-GANG")
        and r.get("level", "MUST") == "MUST"
        and r.get("verdict") not in ("not-run", "not-applicable")
    ]
    return [*(f"{FILE_REF}{EVIDENCE[0]}#{rid}" for rid in gang), *(f"{FILE_REF}{name}" for name in EVIDENCE[1:])]


def _snake(key: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", key)).lower()


def gang_status(rows: list[dict[str, Any]]) -> tuple[str, str]:
    """(status, why) from the verdicts of the gang-scheduling MUST requirements of the run."""
    gang = [r for r in rows if r["id"].startswith("KUEUE-GANG") and r.get("level", "MUST") == "MUST"]
    ran = [r for r in gang if r["verdict"] not in ("not-run", "not-applicable")]
    passed = [r for r in ran if r["verdict"] == "passed"]
    listing = ", ".join(f"{r['id']} {r['verdict']}" for r in gang) or "none in this run"
    if not ran:
        return "Not Implemented", f"no evidence, no gang-scheduling requirement ran ({listing}); `lwsc run --certify`"
    if len(passed) == len(gang):
        return "Implemented", f"every gang-scheduling requirement passed ({listing})"
    if passed:
        return "Partially Implemented", f"some gang-scheduling requirements did not pass ({listing})"
    return "Not Implemented", f"no gang-scheduling requirement passed ({listing})"


def _minor(version: str) -> str:
    m = re.match(r"^v?(\d+)\.(\d+)", version or "")
    return f"v{m.group(1)}.{m.group(2)}" if m else "[Kubernetes Version]"


def build(summary: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The PRODUCT.yaml document for a run's summary.json."""
    versions = summary.get("versions", {})
    given = {k: str(v) for k, v in (metadata or {}).items() if v not in (None, "")}
    meta = {k: given.get(k, f"[{_snake(k).replace('_', ' ').title()}]") for k in METADATA}
    meta["kubernetesVersion"] = given.get("kubernetesVersion", _minor(versions.get("kubernetes", "")))
    if "repoUrl" in given:
        meta["repoUrl"] = given["repoUrl"]
    status, why = gang_status(summary.get("requirements", []))
    harness = summary.get("harness", {})
    ok, use = for_submission(summary)
    notes = (
        ("" if ok else f"NOT FOR SUBMISSION: {use}. ")
        + f"{KAR}: {why}. Solution: Kueue {versions.get('kueue', '?')} with its LeaderWorkerSet integration "
        f"(LWS {versions.get('lws', '?')}). Evidence produced by lws-conformance {harness.get('version', '?')} "
        f"(commit {harness.get('commit', '?')}), run {summary.get('run_id', '?')}, mode {summary.get('mode', '?')}."
    )
    entry: dict[str, Any] = {"id": ITEM, "description": DESCRIPTION, "level": "MUST", "status": status}
    entry.update({"evidence": evidence(summary.get("requirements", [])), "notes": notes})
    run = {
        "run": summary.get("run_id", "?"),
        "mode": summary.get("mode", "standard"),
        "exitCode": (summary.get("conclusion") or {}).get("code"),
        "forSubmission": ok,
        "why": use,
    }
    return {RUN_KEY: run, "metadata": meta, "spec": {CATEGORY: [entry]}}


def render(summary: dict[str, Any], metadata: dict[str, Any] | None = None) -> str:
    ok, use = for_submission(summary)
    warning = "" if ok else f"# NOT FOR SUBMISSION: {use}.\n"
    header = warning + (
        "# CNCF Kubernetes AI-conformance entry for schedulingOrchestration/gang_scheduling (KAR-0053),\n"
        "# generated by lws-conformance from this run's verdicts (format: github.com/cncf/k8s-ai-conformance,\n"
        "# docs/AIConformance-<version>.yaml). Merge it into your submission's PRODUCT.yaml; fill every\n"
        "# [placeholder] (or pass `lwsc run --product-metadata FILE`).\n"
    )
    return header + yaml.safe_dump(build(summary, metadata), sort_keys=False, width=100)


def _metadata_problems(meta: Any, *, final: bool) -> list[str]:
    if not isinstance(meta, dict):
        return ["missing 'metadata' section"]
    out = []
    for key in (*METADATA, *OPTIONAL_METADATA):
        value = meta.get(key, meta.get(_snake(key)))
        if value is None:
            out += [] if key in OPTIONAL_METADATA else [f"missing metadata field: {key} (or {_snake(key)})"]
        elif not isinstance(value, str):
            out.append(f"metadata field {key} is not a string")
        elif not value:
            out += [] if key in OPTIONAL_METADATA else [f"metadata field {key} is empty"]
        elif value.startswith("[") and value.endswith("]"):
            out += [f"metadata field {key} has placeholder value: {value}"] if final else []
        elif key == "k8sConformanceUrl" and not K8S_CONFORMANCE_URL.match(value):
            out.append(f"invalid k8sConformanceUrl format: {value}")
        elif key == "productLogoUrl" and value.startswith("http") and not value.lower().endswith(LOGO_SUFFIXES):
            out.append(f"productLogoUrl must link to an SVG, EPS, or AI file: {value}")
    return out


def _entry_problems(req: Any, base: Path | None) -> list[str]:
    if not isinstance(req, dict) or not isinstance(req.get("id"), str):
        return [f"requirement entry without an id: {req!r}"]
    rid, out = req["id"], []
    for key, kind in (("description", str), ("level", str), ("status", str), ("evidence", list), ("notes", str)):
        if not isinstance(req.get(key), kind):
            out.append(f"'{rid}': field {key} must be a {kind.__name__}")
    level, status = req.get("level"), req.get("status")
    if level not in LEVELS:
        out.append(f"'{rid}': level {level!r} is not one of {LEVELS}")
    if level == "SHOULD" and status == "" and not req.get("evidence"):
        return out  # an unanswered SHOULD is allowed
    if status not in STATUSES:
        out.append(f"invalid status {status!r} for '{rid}'; must be one of {', '.join(STATUSES)}")
    if status == "N/A" and not req.get("notes"):
        out.append(f"notes required for '{rid}' when status is N/A")
    for link in req.get("evidence") or []:
        path = local_path(link) if isinstance(link, str) else None
        if path and base is not None and not (base / path).is_file():
            out.append(f"evidence file for '{rid}' not found: {link}")
        elif path and base is not None and "#" in link and link.partition("#")[2] not in (base / path).read_text():
            out.append(f"evidence for '{rid}': {path} has no {link.partition('#')[2]}")
    return out


def problems(doc: Any, *, base: Path | None = None, final: bool = False) -> list[str]:
    """Every rule of the format the document breaks. `final`: as for a submission, where
    [placeholders] are errors and a MUST item must be Implemented; else (a generated entry) they
    are allowed. `base`: the directory local evidence paths are relative to (checked if given)."""
    if not isinstance(doc, dict):
        return ["not a YAML mapping"]
    out = _metadata_problems(doc.get("metadata"), final=final)
    spec = doc.get("spec")
    if not isinstance(spec, dict) or not spec:
        return [*out, "missing 'spec' section"]
    for category, reqs in spec.items():
        if not isinstance(reqs, list):
            out.append(f"spec category {category} is not a list")
            continue
        ids = [str(r.get("id")) for r in reqs if isinstance(r, dict)]
        out += [f"duplicate requirement id {i!r} in {category}" for i in sorted({i for i in ids if ids.count(i) > 1})]
        for req in reqs:
            out += _entry_problems(req, base)
            if final and isinstance(req, dict) and req.get("level") == "MUST" and req.get("status") != "Implemented":
                out.append(f"requirement '{req.get('id')}' is MUST level but status is {req.get('status')!r}")
    if ITEM not in [r.get("id") for r in spec.get(CATEGORY) or [] if isinstance(r, dict)]:
        out.append(f"missing requirement '{ITEM}' in category '{CATEGORY}'")
    return out


def check_file(path: Path, *, final: bool = False) -> list[str]:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        return [f"cannot read {path}: {exc}"]
    return problems(doc, base=path.parent, final=final)
