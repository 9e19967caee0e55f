"""What `lwsc` needs from any provider (`Provider`: up, handle, down, release) and what suites get
from it (`ClusterHandle`: a kubeconfig, versions, topology and capabilities).

Suites never learn how the cluster was made. Capabilities say what faults a provider can inject
(e.g. only the local provider can stop a controller process); a suite needing a missing one skips
with that reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from ..profile import Topology

# The local provider's capability: its Kueue lists the `pod` integration and manages plain Pods
# (install/controllers.py FRAMEWORKS); on other providers Scenario reads Kueue's configuration.
PLAIN_PODS = "kueue-plain-pods"


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
    images: dict[str, str] = field(default_factory=dict)  # a suite image -> what the cluster holds instead

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


class Provider(Protocol):
    """One way of getting a cluster, as `lwsc up`, `down` and `run` use it.

    `creates`: local and kind bring clusters up and down; the existing provider adopts one the
    user runs and never stops it. `up` is idempotent (a running cluster is reused, an adopted one
    checked by preflight) and writes the handle the suites read (`handle_file`). After a run on a
    cluster that stays (reused, kept or adopted), `release(run_id)` deletes what that run created
    there and returns what it deleted; otherwise `down()` removes the cluster.
    """

    creates: bool

    @property
    def handle_file(self) -> Path: ...

    def running(self) -> bool: ...

    def up(self, progress: Callable[[str], None]) -> ClusterHandle: ...

    def down(self) -> None: ...

    def release(self, run_id: str) -> list[str]: ...
