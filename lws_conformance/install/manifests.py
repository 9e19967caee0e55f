"""LWS and Kueue manifests from their own module, rewritten for controllers running as processes.

We render `config/default` with kustomize (it adds name prefixes, LWS's pod-webhook objectSelector
and Kueue's namespaceSelector), keep only CRDs and webhook configurations, and point every
`clientConfig.service` at `https://127.0.0.1:<port><path>` with our CA, as envtest does. Deployments,
Services, RBAC and Kueue's visibility APIService are dropped: nothing in-cluster serves them.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from ..errors import InfraError

KEEP_KINDS = ("CustomResourceDefinition", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
WEBHOOK_KINDS = KEEP_KINDS[1:]


def render(kubectl: Path, module_root: Path, cache_file: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize <module>/config/default`, cached per module version as JSON (parsing
    Kueue's 1.4 MB of CRD YAML costs seconds on every bring-up; JSON costs milliseconds)."""
    if cache_file.is_file():
        docs: list[dict[str, Any]] = json.loads(cache_file.read_text())
        return docs
    proc = subprocess.run(
        [str(kubectl), "kustomize", str(module_root / "config" / "default")],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["no output"])[0]
        raise InfraError(f"rendering {module_root}/config/default failed: {first}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [d for d in yaml.load_all(proc.stdout, Loader=loader) if d]
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(docs))
    tmp.rename(cache_file)
    return docs


def _url_config(client_config: dict[str, Any], port: int, ca_b64: str, default_path: str) -> dict[str, Any]:
    service = client_config.get("service") or {}
    path = service.get("path") or default_path
    return {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_b64}


def rewrite(docs: list[dict[str, Any]], port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """Keep CRDs and webhook configurations; turn service references into loopback URLs."""
    ca_b64 = base64.b64encode(ca_pem).decode()
    out: list[dict[str, Any]] = []
    for doc in docs:
        kind = doc.get("kind")
        if kind not in KEEP_KINDS:
            continue
        if kind == "CustomResourceDefinition":
            conversion = doc.get("spec", {}).get("conversion") or {}
            webhook = conversion.get("webhook")
            if conversion.get("strategy") == "Webhook" and webhook:
                webhook["clientConfig"] = _url_config(webhook.get("clientConfig", {}), port, ca_b64, "/convert")
        else:
            for hook in doc.get("webhooks", []):
                hook["clientConfig"] = _url_config(hook.get("clientConfig", {}), port, ca_b64, "/")
        out.append(doc)
    return out


def split(docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(CRDs, webhook configurations): CRDs go in first, webhooks only once the server answers."""
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    hooks = [d for d in docs if d["kind"] in WEBHOOK_KINDS]
    return crds, hooks


def dump(docs: list[dict[str, Any]]) -> str:
    """A JSON `List` for `kubectl apply -f -` (much faster to write and parse than YAML)."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
