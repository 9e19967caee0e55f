"""Keys of a local etcd read and written through its JSON gateway (`/v3/kv/*`), for the one
write the harness makes below the API server: a restored snapshot's CRDs pointed at this
cluster's conversion webhooks before the API server starts (`snapshot.point_stored_conversions`).
"""

from __future__ import annotations

import base64
import json
import urllib.request
from typing import Any

TIMEOUT = 10.0  # seconds for one request to the local etcd, which answers in milliseconds


def _call(etcd_url: str, method: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        f"{etcd_url}/v3/kv/{method}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
        out: dict[str, Any] = json.load(resp)
    return out


def _b64(raw: str) -> str:
    return base64.b64encode(raw.encode()).decode()


def get_json(etcd_url: str, key: str) -> Any:
    """The JSON value stored at `key`, None when the key is absent."""
    kvs = _call(etcd_url, "range", {"key": _b64(key)}).get("kvs") or []
    return json.loads(base64.b64decode(kvs[0]["value"])) if kvs else None


def put_json(etcd_url: str, key: str, value: Any) -> None:
    _call(etcd_url, "put", {"key": _b64(key), "value": base64.b64encode(json.dumps(value).encode()).decode()})
