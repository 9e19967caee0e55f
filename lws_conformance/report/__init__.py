"""Reports: per-requirement verdicts (summary.json / summary.md) from the run's test results."""
