"""lws-conformance: conformance and chaos harness for LeaderWorkerSet and its Kueue integration.

The public API is small on purpose: `Profile`, the providers' `ClusterHandle`, the pytest
plugin's fixtures, and `lws_conformance.testing`, the kit every suite imports from. Everything
else is an implementation detail that may change.
"""

__version__ = "0.1.0"
