"""A full CNCF Kubernetes AI-conformance submission (`vX.Y/<product>/PRODUCT.yaml`), checked as
github.com/cncf/k8s-ai-conformance's validator (scripts/validate.go) checks it, and started from a
run's gang-scheduling entry.

The validator reads the checklist template of the submission's Kubernetes version
(`docs/AIConformance-X.Y.yaml`, shipped unchanged in fixtures/ai-conformance/) and requires: the
metadata fields (no placeholder, a k8s-conformance URL of the right shape, a vector logo); every
category and every item of the template; a valid status for each item, `Implemented` for each
MUST (an unanswered SHOULD, empty status and no evidence, is allowed); notes for N/A; every local
evidence file present next to PRODUCT.yaml. The levels are the template's, not the submission's;
the instructions also ask for `id`, `description` and `level` unchanged.

What needs the network is not checked here, and `OFFLINE` says so: the validator fetches every
http(s) URL of the metadata and the evidence, and looks `vendorName` up among the CNCF members of
the landscape.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from .. import resources
from . import product

TEMPLATES = "ai-conformance"
VERSION_IN_PATH = re.compile(r"(?:^|/)v(\d+\.\d+)/")
OFFLINE = (
    "not checked offline (the CNCF validator does them online): every http(s) URL of the metadata and the "
    "evidence answers, and vendorName is a CNCF member as listed at https://landscape.cncf.io/members"
)
EVIDENCE_DIR = "lws-conformance"  # where `merge` copies the run's evidence, next to PRODUCT.yaml


class NoTemplate(ValueError):
    """No checklist template for that Kubernetes version, or none could be read."""


def template_dir() -> Path:
    return resources.fixtures() / TEMPLATES


def versions() -> list[str]:
    """The Kubernetes minor versions with a shipped template, oldest first ("1.33", ...)."""
    found = [p.stem.removeprefix("AIConformance-") for p in template_dir().glob("AIConformance-*.yaml")]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def minor(text: str) -> str | None:
    m = re.match(r"^v?(\d+)\.(\d+)", str(text or "").strip())
    return f"{m.group(1)}.{m.group(2)}" if m else None


def template(version: str, path: Path | None = None) -> dict[str, Any]:
    """The checklist template of Kubernetes `version` ("1.36" or "v1.36"), or the file `path`."""
    if path is None:
        v = minor(version)
        path = template_dir() / f"AIConformance-{v}.yaml"
        if not v or not path.is_file():
            raise NoTemplate(
                f"no AIConformance template for Kubernetes {version!r} (shipped: {', '.join(versions())}); "
                "pass --template FILE with docs/AIConformance-<version>.yaml of github.com/cncf/k8s-ai-conformance"
            )
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise NoTemplate(f"cannot read the template {path}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
        raise NoTemplate(f"{path} is not an AIConformance template (no spec)")
    return doc


def version_of(path: Path, doc: Any) -> str | None:
    """The submission's Kubernetes version as the validator finds it (the `vX.Y/` directory of its
    path), else its metadata's kubernetesVersion."""
    m = VERSION_IN_PATH.search(path.resolve().as_posix())
    if m:
        return m.group(1)
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return minor(str((meta or {}).get("kubernetesVersion") or (meta or {}).get("kubernetes_version") or ""))


def problems(doc: Any, tmpl: dict[str, Any], *, base: Path | None = None) -> list[str]:
    """Every rule of the validator (and of the submission instructions) `doc` breaks, against the
    template `tmpl`. `base`: the directory local evidence paths are relative to."""
    if not isinstance(doc, dict):
        return ["not a YAML mapping"]
    out = product._metadata_problems(doc.get("metadata"), final=True)
    want = minor(str((tmpl.get("metadata") or {}).get("kubernetesVersion") or ""))
    meta = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
    got = minor(str(meta.get("kubernetesVersion") or meta.get("kubernetes_version") or ""))
    if want and got and want != got:
        out.append(f"metadata kubernetesVersion v{got} is not the template's v{want}")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return [*out, "missing 'spec' section"]
    for category, items in tmpl["spec"].items():
        given = spec.get(category)
        if given is None:
            out.append(f"missing spec category: {category}")
            continue
        if not isinstance(given, list):
            out.append(f"spec category {category} is not a list")
            continue
        by_id = {r.get("id"): r for r in given if isinstance(r, dict)}
        for item in items:
            rid = item["id"]
            if rid not in by_id:
                out.append(f"missing requirement '{rid}' in category '{category}'")
                continue
            out += _item_problems(by_id[rid], item, base)
    return out


def _item_problems(req: dict[str, Any], item: dict[str, Any], base: Path | None) -> list[str]:
    rid, level, out = item["id"], item.get("level"), []
    for key in ("description", "level"):
        if req.get(key) != item.get(key):
            out.append(f"'{rid}': {key} differs from the template (submit id, description and level unchanged)")
    status, evidence = req.get("status"), req.get("evidence")
    for key, kind in (("status", str), ("notes", str), ("evidence", list)):
        if req.get(key) is not None and not isinstance(req.get(key), kind):
            out.append(f"'{rid}': field {key} must be a {kind.__name__}")
    if level == "SHOULD" and not status and not evidence:
        return out  # an unanswered SHOULD
    if status not in product.STATUSES:
        out.append(f"invalid status {status or ''!r} for '{rid}'; must be one of {', '.join(product.STATUSES)}")
    if level == "MUST" and status != "Implemented":
        out.append(f"requirement '{rid}' is MUST level but status is {status or ''!r}; it must be 'Implemented'")
    if status == "N/A" and not req.get("notes"):
        out.append(f"notes required for '{rid}' when status is N/A")
    for link in evidence if isinstance(evidence, list) else []:
        local = isinstance(link, str) and link and not link.startswith(("http://", "https://"))
        if local and base is not None and not (base / link).is_file():
            hint = (
                (
                    " (the CNCF validator looks a local evidence file up as a plain path next to PRODUCT.yaml: "
                    "write it without file:// and #)"
                )
                if link.startswith(product.FILE_REF)
                else ""
            )
            out.append(f"evidence file for '{rid}' not found: {link} (relative to {base}){hint}")
    return out


def check_file(path: Path, template_file: Path | None = None) -> tuple[list[str], str]:
    """(problems, the template used) for the submission at `path`."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        return [f"cannot read {path}: {exc}"], "-"
    version = version_of(path, doc)
    if template_file is None and not version:
        return ["no Kubernetes version: neither a vX.Y/ directory in the path nor metadata.kubernetesVersion"], "-"
    tmpl = template(version or "", template_file)
    used = str(template_file) if template_file else f"AIConformance-{minor(version or '')}"
    return problems(doc, tmpl, base=path.parent), used


def merge(
    entry: dict[str, Any],
    base: dict[str, Any],
    evidence_from: Path | None = None,
    evidence_to: Path | None = None,
) -> dict[str, Any]:
    """`base` (a template or a submission) with the run's gang-scheduling entry merged in: its
    status, evidence and notes on the base's item (id, description and level stay the base's),
    and the run's metadata where the base has none or a placeholder. With `evidence_from` (the run
    directory) and `evidence_to` (the submission's directory), the evidence files are copied to
    `evidence_to/lws-conformance/` and referenced from there."""
    out = copy.deepcopy(base)
    meta = out.setdefault("metadata", {})
    for key, value in (entry.get("metadata") or {}).items():
        current = meta.get(key, meta.get(product._snake(key)))
        if not _filled(current) and _filled(value):
            meta[key] = value
    for key in product.METADATA:  # the validator requires these even where a template lacks one
        if key not in meta and product._snake(key) not in meta:
            meta[key] = f"[{product._snake(key).replace('_', ' ').title()}]"
    run_item = next(r for r in entry["spec"][product.CATEGORY] if r.get("id") == product.ITEM)
    items = out.setdefault("spec", {}).setdefault(product.CATEGORY, [])
    target = next((r for r in items if isinstance(r, dict) and r.get("id") == product.ITEM), None)
    if target is None:
        target = {k: run_item[k] for k in ("id", "description", "level")}
        items.insert(0, target)
    evidence = list(run_item.get("evidence") or [])
    if evidence_from is not None and evidence_to is not None:
        dest = evidence_to / EVIDENCE_DIR
        dest.mkdir(parents=True, exist_ok=True)
        copied: list[str] = []
        for ref in evidence:
            name = product.local_path(ref)
            if name is None:
                copied.append(ref)  # a link stays a link
            elif (evidence_from / name).is_file():
                shutil.copyfile(evidence_from / name, dest / Path(name).name)
                copied.append(f"{EVIDENCE_DIR}/{Path(name).name}")
        evidence = list(dict.fromkeys(copied))
    target.update(status=run_item.get("status", ""), evidence=evidence, notes=run_item.get("notes", ""))
    return out


def _filled(value: Any) -> bool:
    text = str(value or "")
    return bool(text) and not (text.startswith("[") and text.endswith("]"))


def render(doc: dict[str, Any], version: str | None) -> str:
    header = (
        f"# CNCF Kubernetes AI-conformance submission{f' (AIConformance-{version})' if version else ''}.\n"
        "# schedulingOrchestration/gang_scheduling comes from an lws-conformance run; fill every other\n"
        "# item's status, evidence and notes, and every [placeholder]; then: lwsc product-check --final FILE\n"
    )
    return header + yaml.safe_dump(doc, sort_keys=False, width=100, allow_unicode=True)
