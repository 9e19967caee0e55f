"""Fake GPU nodes from the profile's topology (pure: manifests only).

Names and label values are derived, never hard-coded in suites: block `b<i>`, rack `b<i>-r<j>`,
node `gpu-b<i>-r<j>-n<k>`. Every node carries the kwok annotation (kwok manages it), the harness
ownership label (chaos only touches what it created) and `nvidia.com/gpu` capacity.
"""

from __future__ import annotations

from typing import Any

from ..profile import Topology

KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
MANAGED_LABEL = "lwsc.x-k8s.io/managed"
POOL_LABEL = ("lwsc.x-k8s.io/pool", "gpu")


def node_names(t: Topology) -> list[tuple[str, str, str]]:
    """(node, block, rack) for every fake node, in a stable order."""
    out = []
    for b in range(1, t.blocks + 1):
        for r in range(1, t.racks_per_block + 1):
            for n in range(1, t.nodes_per_rack + 1):
                out.append((f"gpu-b{b}-r{r}-n{n}", f"b{b}", f"b{b}-r{r}"))
    return out


def node_manifest(t: Topology, name: str, block: str, rack: str) -> dict[str, Any]:
    resources = {
        "cpu": t.cpu_per_node,
        "memory": t.memory_per_node,
        "pods": str(t.pods_per_node),
        t.gpu_resource: str(t.gpus_per_node),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]},
            "labels": {
                t.hostname_label: name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                MANAGED_LABEL: "true",
                POOL_LABEL[0]: POOL_LABEL[1],
                t.block_label: block,
                t.rack_label: rack,
            },
        },
        "spec": {"providerID": f"kwok://{name}"},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "fake",
                "kubeProxyVersion": "fake",
                "containerRuntimeVersion": "kwok",
                "osImage": "kwok",
                "kernelVersion": "kwok",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    }


def kueue_topology(t: Topology, name: str) -> dict[str, Any]:
    levels = [t.block_label, t.rack_label, t.hostname_label]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": lbl} for lbl in levels]},
    }


def kueue_flavor(name: str, topology_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {POOL_LABEL[0]: POOL_LABEL[1]}, "topologyName": topology_name},
    }
