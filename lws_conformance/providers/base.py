"""What suites get from any provider: a kubeconfig, versions, topology and capabilities.

Suites never learn how the cluster was made. Capabilities say what faults a provider can inject
(e.g. only the local provider can stop a controller process); a suite needing a missing one skips
with that reason.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..profile import Topology


@dataclass(frozen=True)
class ClusterHandle:
    provider: str
    kubeconfig: Path
    versions: dict[str, str]
    topology: Topology
    kueue_topology_name: str
    kueue_flavor_name: str
    logs: dict[str, str] = field(default_factory=dict)  # component -> log path
    capabilities: frozenset[str] = frozenset()
    endpoints: dict[str, str] = field(default_factory=dict)  # e.g. lws-metrics -> https://host:port/metrics

    def to_json(self) -> str:
        data = asdict(self)
        data["kubeconfig"] = str(self.kubeconfig)
        data["capabilities"] = sorted(self.capabilities)
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> ClusterHandle:
        data = json.loads(text)
        data["kubeconfig"] = Path(data["kubeconfig"])
        data["topology"] = Topology(**data["topology"])
        data["capabilities"] = frozenset(data["capabilities"])
        return cls(**data)
