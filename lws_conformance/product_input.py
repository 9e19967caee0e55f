"""`lwsc run --product-metadata FILE`, checked before any work: a YAML mapping of PRODUCT.yaml
metadata keys (or a PRODUCT.yaml-shaped file with them under `metadata:`), every key one the
PRODUCT.yaml format has (camelCase, as `report.product` writes them), every value a string of the
right shape; under --certify every required key given and none a `[placeholder]`. Every problem
of the file is named in the one line of the `UserError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import UserError
from .report.product import K8S_CONFORMANCE_URL, LOGO_SUFFIXES, METADATA, OPTIONAL_METADATA

KEYS = (*METADATA, *OPTIONAL_METADATA)
CONFORMANCE_URL_SHAPE = "https://github.com/cncf/k8s-conformance/tree/main/vX.Y/<product>"


def check(src: str | None, certify: bool) -> Path | None:
    """The file, or None when not given; a `UserError` naming each problem otherwise."""
    if not src:
        return None
    path = Path(src).expanduser()
    if not path.is_file():
        raise UserError(f"--product-metadata {path} does not exist; give a YAML file of PRODUCT.yaml metadata keys")
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).replace("\n", " ")[:160]
        raise UserError(f"--product-metadata {path} is not valid YAML ({first}); fix the file") from None
    problems = problems_of(doc, certify)
    if problems:
        raise UserError(f"--product-metadata {path}: {'; '.join(problems)}")
    return path


def problems_of(doc: Any, certify: bool) -> list[str]:
    """What is wrong with a metadata document (empty: nothing)."""
    if not isinstance(doc, dict):
        return [f"must be a mapping of metadata keys ({', '.join(METADATA[:2])}, ...), not a {type(doc).__name__}"]
    if "metadata" in doc:
        extra = sorted(str(k) for k in doc if k not in ("metadata", "spec"))
        out = [f"unknown top-level key(s) {', '.join(extra)} (expected metadata:)"] if extra else []
        if not isinstance(doc["metadata"], dict):
            return [*out, "metadata: must be a mapping of metadata keys"]
        return out + _fields(doc["metadata"], certify)
    return _fields(doc, certify)


def _fields(meta: dict[Any, Any], certify: bool) -> list[str]:
    out = []
    by_folded = {k.lower(): k for k in KEYS}
    for key, value in meta.items():
        if key not in KEYS:
            near = by_folded.get(str(key).replace("_", "").replace("-", "").lower())
            hint = f" (did you mean {near}?)" if near else f"; valid keys: {', '.join(KEYS)}"
            out.append(f"unknown key '{key}'{hint}")
        elif value is None or value == "":
            out += [f"{key} is empty"] if certify and key not in OPTIONAL_METADATA else []
        elif not isinstance(value, str):
            out.append(f"{key} must be a string, not {type(value).__name__} {value!r} (quote it)")
        elif value.startswith("[") and value.endswith("]"):
            out += [f"{key} is still the placeholder {value}"] if certify else []
        elif key == "k8sConformanceUrl" and not K8S_CONFORMANCE_URL.match(value):
            out.append(f"k8sConformanceUrl {value} is not a {CONFORMANCE_URL_SHAPE} URL")
        elif key == "productLogoUrl" and value.startswith("http") and not value.lower().endswith(LOGO_SUFFIXES):
            out.append(f"productLogoUrl {value} must link to an SVG, EPS or AI file")
    if certify:
        missing = [k for k in METADATA if k not in meta and k != "kubernetesVersion"]
        out += [f"--certify needs every metadata key; missing: {', '.join(missing)}"] if missing else []
    return out
