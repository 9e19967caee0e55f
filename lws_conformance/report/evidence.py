"""Files a release manager or certification reviewer reads besides the summary.

- allure-results/environment.properties and categories.json ("contract violated" vs "harness or
  infrastructure broken"), so Allure groups failures by whose fault they are;
- (PRODUCT.yaml, the CNCF AI-conformance entry, is `product.py`);
- a secret scan: no artefact may contain key material or credentials.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

CATEGORIES = [
    {
        "name": "Contract violated (a requirement failed)",
        "matchedStatuses": ["failed"],
        "messageRegex": "(?s)^(?!.*(lwsc: |exited during start-up|Connection refused|InfraError)).*",
    },
    {
        "name": "Harness or infrastructure broken",
        "matchedStatuses": ["broken", "failed"],
        "messageRegex": "(?s).*(lwsc: |exited during start-up|Connection refused|InfraError).*",
    },
    {
        "name": "Known upstream deviation or SHOULD-level warning",
        "matchedStatuses": ["skipped"],
        "messageRegex": "(?s).*(known-deviation|warning).*",
    },
]


def write_allure_metadata(results_dir: Path, versions: dict[str, str], provider: str, profile: str) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    props = {f"{k.capitalize()}.version": v for k, v in sorted(versions.items())}
    props.update({"Provider": provider, "Profile": profile})
    (results_dir / "environment.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    (results_dir / "categories.json").write_text(json.dumps(CATEGORIES, indent=2))


_SECRET_PATTERNS = [
    re.compile(rb"-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----"),
    re.compile(rb"client-key-data:\s*\S"),
    re.compile(rb"(?i)authorization:\s*bearer\s+\S"),
    re.compile(rb"\btoken:\s*[A-Za-z0-9._-]{20,}"),
]


def find_secrets(root: Path, extra_needles: list[bytes] | None = None) -> list[str]:
    """Every file under `root` holding key material or credentials (or one of `extra_needles`,
    e.g. the cluster's own admin key bytes)."""
    hits = []
    needles = [n for n in (extra_needles or []) if n]
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        data = f.read_bytes()
        if any(p.search(data) for p in _SECRET_PATTERNS) or any(n in data for n in needles):
            hits.append(str(f))
    return hits
