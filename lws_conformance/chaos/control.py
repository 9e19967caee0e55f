"""A chaostoolkit control that undoes every fault still in effect when an experiment ends.

Why: on Ctrl-C (or SIGTERM) chaostoolkit swallows the interrupt, marks the journal
"interrupted" and, with the default rollback strategy, plays no rollbacks, so a controller
stopped by the method would stay stopped. Controls' `after_experiment_control` still runs, so
experiments declare `controls: [{name: lwsc-restore, provider: {type: python, module:
lws_conformance.chaos.control}}]` and `chaos run` is as safe as the pytest runner.
"""

from __future__ import annotations

import logging
from typing import Any

from . import safety

logger = logging.getLogger("chaostoolkit")


def after_experiment_control(context: Any, state: Any = None, **kwargs: Any) -> None:
    left = safety.pending()
    if not left:
        return
    logger.warning("lwsc: undoing faults still in effect: %s", "; ".join(left))
    for err in safety.restore_all():
        logger.error("lwsc: could not undo %s", err)
