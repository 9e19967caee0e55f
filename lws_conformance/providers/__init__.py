"""Providers bring up (or adopt) a cluster and hand suites a `ClusterHandle`."""
