"""Unit tests of the TAS rank-ordering check (predicates.rank_order_breaks) on recorded placements."""

from __future__ import annotations

from lws_conformance.k8s.predicates import rank_order_breaks

# Shape recorded on the local cluster (KUEUE-TAS-005): 4 workers at half a node each in one rack.
ORDERED = {1: "gpu-b1-r2-n1", 2: "gpu-b1-r2-n1", 3: "gpu-b1-r2-n2", 4: "gpu-b1-r2-n2"}


def test_ordered_placement_passes() -> None:
    assert rank_order_breaks(ORDERED) == []


def test_interleaved_placement_fails() -> None:
    placed = {1: "gpu-b1-r2-n1", 2: "gpu-b1-r2-n2", 3: "gpu-b1-r2-n1", 4: "gpu-b1-r2-n2"}
    (why,) = [b for b in rank_order_breaks(placed) if "non-contiguous" in b]
    assert "gpu-b1-r2-n1" in why


def test_reversed_node_order_fails() -> None:
    placed = {1: "gpu-b1-r2-n2", 2: "gpu-b1-r2-n2", 3: "gpu-b1-r2-n1", 4: "gpu-b1-r2-n1"}
    assert rank_order_breaks(placed) == [
        "nodes in index order ['gpu-b1-r2-n2', 'gpu-b1-r2-n1'] are not in ascending name order"
    ]
