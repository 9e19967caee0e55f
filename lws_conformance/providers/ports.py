"""Blocks of ports for extra local clusters (private test clusters, benchmarks), claimed
across concurrent sessions on one machine."""

from __future__ import annotations

import os

from ..errors import UserError
from ..toolchain import cache as bincache
from . import process
from .components import PORT_OFFSETS, state_root


def claim_port_range(first: int = 19000, last: int = 29000, step: int = 100) -> int:
    """Claim a free block of ports for an extra cluster (private test clusters, benchmarks).

    Concurrent pytest sessions on one machine must not pick the same ports, so a base port is
    claimed with a file holding our pid (a claim whose pid is gone is stale) under a lock, and
    only when every port of the block is free right now. `release_port_range` gives it back.
    """
    claims = state_root() / "port-claims"
    claims.mkdir(parents=True, exist_ok=True)
    with bincache.locked("port-claims"):
        for base in range(first, last, step):
            claim = claims / str(base)
            if claim.is_file():
                try:
                    os.kill(int(claim.read_text() or 0), 0)
                    continue  # claimed by a live process
                except (ProcessLookupError, ValueError):
                    claim.unlink()
            if all(process.port_free(base + off) for off in PORT_OFFSETS.values()):
                claim.write_text(str(os.getpid()))
                return base
    raise UserError(f"no free block of {step} ports between {first} and {last} on 127.0.0.1; stop stale clusters")


def release_port_range(base: int) -> None:
    (state_root() / "port-claims" / str(base)).unlink(missing_ok=True)
