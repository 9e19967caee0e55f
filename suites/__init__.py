"""The conformance suites, one package per area (lws, rollout, kueue, ...). A suite imports the
harness through `lws_conformance.testing` only, and what its tests share from its own support
modules (e.g. `rollout.rollout_support`), never from another test module."""
