"""Talking to a cluster: client factory, the one wait primitive, object helpers."""
