"""benchmarks/cpu_ab.py: variants, and CPU charged to one process tree only."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import benchmark_module

cpu_ab = benchmark_module("cpu_ab.py")


def test_a_variant_is_a_tree_and_settings(tmp_path: Path) -> None:
    v = cpu_ab.Variant.parse(f"gc100={tmp_path}:GOGC=100,GOMEMLIMIT=off")
    assert (v.label, v.tree, v.env) == ("gc100", tmp_path, {"GOGC": "100", "GOMEMLIMIT": "off"})
    assert cpu_ab.Variant.parse(f"new={tmp_path}").env == {}


def test_the_sampler_charges_the_tree_and_not_a_neighbour() -> None:
    """A busy grandchild counts; a busy process outside the tree does not."""
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\ntime.sleep(0.5)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {spin!r}])"
    tree = subprocess.Popen([sys.executable, "-c", parent])
    neighbour = subprocess.Popen([sys.executable, "-c", spin])
    sampler = cpu_ab.TreeSampler(tree.pid, "x")
    while tree.poll() is None:
        sampler.sample()
        time.sleep(0.05)
    neighbour.wait()
    used = sampler.by_program().get("python", 0.0)
    assert 0.4 <= used < 1.0, used


def test_without_a_focus_the_full_run_is_measured_and_named(tmp_path: Path) -> None:
    meta = {"date": "d", "machine": "m", "focus": None, "workers": 3, "variants": {"base": "abc"}}
    run = {
        "round": 1,
        "variant": "base",
        "cpu_s": 1.0,
        "wall_s": 1.0,
        "exit": 4,
        "load_before": 1.0,
        "load_after": 1.0,
        "cpu_by_program_s": {},
        "verdict_differences": {},
    }
    cpu_ab.write(tmp_path / "r", meta, [run], ["base"])
    assert (tmp_path / "r.md").read_text().startswith("# CPU A/B of `lwsc run -n 3` (d, m)")
    cpu_ab.write(tmp_path / "r", {**meta, "focus": "LWS-NAME"}, [run], ["base"])
    assert (tmp_path / "r.md").read_text().startswith('# CPU A/B of `lwsc run --focus "LWS-NAME" -n 3`')
