"""Where the harness's data lives: suites/, fixtures/, chaos/ and docs/upstream/.

In a git checkout they are the top-level directories next to the package; in an installed wheel
the build copies them into the package as `lws_conformance/_data/` (setup.py). Every place that
reads them asks this module, so `lwsc run` works from any directory either way.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import metadata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CHECKOUT = PACKAGE.parent
PACKAGED = PACKAGE / "_data"
TREES = ("suites", "fixtures", "chaos", "docs/upstream")  # what the wheel carries (setup.py reads this)
ENV = "LWSC_DATA_DIR"  # points at another tree of the same layout (a vendor's fork of the suites)


def _is_root(path: Path) -> bool:
    return (path / "suites").is_dir() and (path / "fixtures").is_dir()


@cache
def root() -> Path:
    """The directory holding suites/, fixtures/, chaos/: $LWSC_DATA_DIR, else the checkout (a
    directory with pyproject.toml next to the package), else the data inside the package."""
    override = os.environ.get(ENV)
    if override:
        return Path(override).expanduser().resolve()
    if (CHECKOUT / "pyproject.toml").is_file() and _is_root(CHECKOUT):
        return CHECKOUT
    return PACKAGED


def installed() -> bool:
    """True when running from the package's own copy (a wheel install), not a checkout."""
    return root() == PACKAGED


def suites() -> Path:
    return root() / "suites"


def fixtures() -> Path:
    return root() / "fixtures"


def chaos() -> Path:
    return root() / "chaos"


def path(relative: str) -> Path:
    """A file named relative to the checkout root, e.g. `docs/upstream/X.md` of a deviation."""
    return root() / relative


PLUGIN = "lws_conformance.plugin"  # the pytest plugin: loaded by `lwsc run` and the suites' conftest only


@cache
def plugin_args() -> list[str]:
    """`-p lws_conformance.plugin` for a pytest run of the suites; nothing where an older install
    still registers the plugin as a `pytest11` entry point (it is loaded already; loading it twice
    is an error) until `pip install` runs again."""
    stale = any(  # every distribution, as pytest's autoload sees them (an editable install's too)
        ep.group == "pytest11" and ep.value == PLUGIN for d in metadata.distributions() for ep in d.entry_points
    )
    return [] if stale else ["-p", PLUGIN]
