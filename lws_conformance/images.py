"""The container images the suites' workloads name, and their override for air-gapped registries.

On the local cluster (kwok fake nodes) nothing is pulled; on a real cluster every pod of the
suites pulls these. Profile key `images.registry` (e.g. `--set images.registry=mirror.local/k8s`)
replaces the `registry.k8s.io` prefix of every one; `lwsc images` lists what to mirror. The
plugin exports the key to the test processes as $LWSC_IMAGE_REGISTRY (as it does timeouts.scale).
"""

from __future__ import annotations

import json
import os
from typing import Any

REGISTRY_ENV = "LWSC_IMAGE_REGISTRY"
# Images a provider put in the cluster instead of these (JSON: reference -> reference), from the
# cluster handle: the kind provider's nodes hold locally built images and never pull.
SUBSTITUTES_ENV = "LWSC_IMAGE_SUBSTITUTES"
UPSTREAM = "registry.k8s.io"
# name -> reference; what uses it.
IMAGES = {
    "workload": ("registry.k8s.io/nginx-slim:0.27", "every LWS / Kueue workload of the suites (fixtures/manifests)"),
    "workload-update": ("registry.k8s.io/nginx-slim:0.26", "the image a rolling update changes to (kueue updates)"),
    "agnhost": (
        "registry.k8s.io/e2e-test-images/agnhost:2.63.0",
        "tests that need a real process (a server, DNS lookups, a shell); real kubelets only",
    ),
}


def ref(name: str, registry: str | None = None) -> str:
    """The reference of image `name`, with the override applied."""
    return mirrored(IMAGES[name][0], registry)


def mirrored(image: str, registry: str | None = None) -> str:
    substitutes = os.environ.get(SUBSTITUTES_ENV)
    if substitutes:
        local = json.loads(substitutes).get(image)
        if local:
            return str(local)
    mirror = (registry if registry is not None else os.environ.get(REGISTRY_ENV, "")).rstrip("/")
    if mirror and image.startswith(UPSTREAM + "/"):
        return mirror + image[len(UPSTREAM) :]
    return image


def rewrite(obj: Any, registry: str | None = None) -> Any:
    """Every `image:` of a manifest (nested dicts/lists) with the override applied, in place."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "image" and isinstance(value, str):
                obj[key] = mirrored(value, registry)
            else:
                rewrite(value, registry)
    elif isinstance(obj, list):
        for item in obj:
            rewrite(item, registry)
    return obj
