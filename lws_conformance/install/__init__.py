"""Installing into a cluster: PKI, LWS and Kueue manifests (URL webhooks), controller configs."""
