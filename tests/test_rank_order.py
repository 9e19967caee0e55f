"""Unit tests of the TAS rank checks (predicates.rank_ranges_broken, rank_nodes_unordered) on
recorded placements."""

from __future__ import annotations

from lws_conformance.k8s.predicates import rank_nodes_unordered, rank_ranges_broken

# Shape recorded on the local cluster (KUEUE-TAS-005): 4 workers at half a node each in one rack.
ORDERED = {1: "gpu-b1-r2-n1", 2: "gpu-b1-r2-n1", 3: "gpu-b1-r2-n2", 4: "gpu-b1-r2-n2"}


def test_ordered_placement_passes_both() -> None:
    assert rank_ranges_broken(ORDERED) == []
    assert rank_nodes_unordered(ORDERED) == []


def test_interleaved_placement_breaks_the_ranges() -> None:
    # As recorded under a mutant that drops the workers' pod-index offset.
    placed = {1: "gpu-b1-r2-n1", 2: "gpu-b1-r2-n2", 3: "gpu-b1-r2-n1", 4: "gpu-b1-r2-n2"}
    (why,) = rank_ranges_broken(placed)
    assert "non-contiguous" in why and "gpu-b1-r2-n1" in why


def test_reversed_node_order_keeps_the_ranges_but_not_the_order() -> None:
    placed = {1: "gpu-b1-r2-n2", 2: "gpu-b1-r2-n2", 3: "gpu-b1-r2-n1", 4: "gpu-b1-r2-n1"}
    assert rank_ranges_broken(placed) == []
    assert rank_nodes_unordered(placed) == [
        "nodes in index order ['gpu-b1-r2-n2', 'gpu-b1-r2-n1'] are not in ascending name order"
    ]
