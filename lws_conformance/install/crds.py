"""When the LWS and Kueue CRDs can be used by a controller: Established, and served by discovery.

Why both: a CRD turns Established when the API server accepts it, but the discovery documents
that clients build their REST mappings from (`/apis` aggregated discovery, `/apis/<group>/<version>`)
are refreshed asynchronously. A controller that starts in between fails its start-up lookups:
Kueue exits with "Unable to setup indexes ... setting index on queue for Workload: no matches for
kind" (seen when two clusters came up at once on 2 cores). So start-up waits until every served
version of every CRD lists its resource in both discovery forms (pure checks here; the HTTP
fetching is the provider's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Obj = dict[str, Any]
AGGREGATED_ACCEPT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


def served_resources(crds: Iterable[Obj]) -> dict[str, set[str]]:
    """ "<group>/<version>" -> the plural resource names the CRDs serve there."""
    out: dict[str, set[str]] = {}
    for crd in crds:
        spec = crd["spec"]
        for v in spec.get("versions") or []:
            if v.get("served", True):
                out.setdefault(f"{spec['group']}/{v['name']}", set()).add(spec["names"]["plural"])
    return out


def not_established(objs: Iterable[Obj], names: Iterable[str]) -> list[str]:
    """The CRDs among `names` that are missing or not yet Established=True."""
    have = {o["metadata"]["name"]: o for o in objs}
    out = []
    for name in sorted(set(names)):
        conds = ((have.get(name) or {}).get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
            out.append(name)
    return out


def _aggregated(doc: Obj | None) -> dict[str, set[str]] | None:
    """group/version -> resources in an APIGroupDiscoveryList (stale versions left out); None when
    the server answered without aggregated discovery (clients then use only the per-version lists)."""
    if not doc or doc.get("kind") != "APIGroupDiscoveryList":
        return None
    out: dict[str, set[str]] = {}
    for group in doc.get("items") or []:
        name = (group.get("metadata") or {}).get("name", "")
        for v in group.get("versions") or []:
            if v.get("freshness", "Current") == "Current":
                out[f"{name}/{v.get('version')}"] = {r.get("resource") for r in v.get("resources") or []}
    return out


def missing_from_discovery(
    expected: Mapping[str, set[str]], aggregated: Obj | None, per_version: Mapping[str, Obj | None]
) -> list[str]:
    """What discovery does not serve yet: "<group>/<version>/<plural> (where)" entries.

    `aggregated` is the `/apis` document fetched with AGGREGATED_ACCEPT (a server without
    aggregated discovery answers with a plain APIGroupList: then only the per-version lists count);
    `per_version` maps "<group>/<version>" to its `/apis/<group>/<version>` APIResourceList (None:
    404 or not fetched)."""
    agg = _aggregated(aggregated)
    out = []
    for gv, plurals in sorted(expected.items()):
        listed = {r.get("name") for r in ((per_version.get(gv) or {}).get("resources") or [])}
        for plural in sorted(plurals):
            where = [] if plural in listed else [f"/apis/{gv}"]
            if agg is not None and plural not in agg.get(gv, set()):
                where.append("aggregated /apis")
            if where:
                out.append(f"{gv}/{plural} (not in {', '.join(where)})")
    return out
