from __future__ import annotations

from collections import Counter

from lws_conformance.profile import load_profile
from lws_conformance.providers import nodes


def test_fake_nodes_follow_the_profile_topology() -> None:
    t = load_profile("large").topology
    names = nodes.node_names(t)
    assert len(names) == t.nodes == 32
    racks = Counter(rack for _n, _b, rack in names)
    assert len(racks) == t.racks and set(racks.values()) == {t.nodes_per_rack}
    manifest = nodes.node_manifest(t, *names[0])
    labels = manifest["metadata"]["labels"]
    assert labels[t.rack_label] == names[0][2] and labels[t.block_label] == names[0][1]
    assert manifest["status"]["allocatable"][t.gpu_resource] == str(t.gpus_per_node)
    assert manifest["status"]["addresses"][0] == {"type": "InternalIP", "address": "127.0.0.1"}


def test_kueue_topology_levels_end_with_hostname() -> None:
    t = load_profile().topology
    levels = [lv["nodeLabel"] for lv in nodes.kueue_topology(t, "default")["spec"]["levels"]]
    assert levels == [t.block_label, t.rack_label, t.hostname_label]
