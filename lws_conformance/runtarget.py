"""Which cluster `lwsc run`, `up` and `down` act on, and why: resolved once from --provider,
--kubeconfig, --context, $KUBECONFIG and the profile, checked before any work (the kubeconfig is
readable, the context is in it and names a server), and said in one line, the command's first.

With $KUBECONFIG set and no provider named, the local cluster is used (the harness brings up a
cluster of its own unless told to test another); the line says so and how to test the
$KUBECONFIG cluster instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import UserError
from .profile import Profile
from .providers import existing
from .providers.components import state_root


@dataclass(frozen=True)
class Choice:
    provider: str  # local, kind or existing
    why: str  # what chose it: a flag, $KUBECONFIG, the profile, the default
    name: str  # the local or kind cluster's name
    target: existing.Target | None = None  # the existing cluster's server, context and kubeconfig
    multikueue_workers: int = 0
    unused_kubeconfig: str | None = None  # $KUBECONFIG, set but not what is tested

    def describe(self) -> str:
        """provider, server, context, kubeconfig: what the cluster is."""
        if self.target is not None:
            return f"existing cluster {self.target}"
        if self.provider == "kind":
            return f"kind cluster '{self.name}' (nodes in containers; state {state_root().parent})"
        workers = f" and {self.multikueue_workers} MultiKueue worker(s)" if self.multikueue_workers else ""
        return f"local cluster '{self.name}'{workers} (processes on 127.0.0.1; state {state_root() / self.name})"

    def line(self) -> str:
        text = f"cluster: {self.describe()}, chosen by {self.why}"
        if self.unused_kubeconfig:
            how = (
                "--provider existing"
                if os.pathsep in self.unused_kubeconfig  # a list: merged, not one file
                else '--kubeconfig "$KUBECONFIG" (or --provider existing)'
            )
            text += f"; $KUBECONFIG ({self.unused_kubeconfig}) is not used: to test that cluster, add {how}"
        return text


def resolve(
    *,
    provider_flag: str | None,
    kubeconfig: str | None,
    kubeconfig_from: str,
    context: str | None,
    profile: Profile,
    profile_name: str,
    name: str,
    kubeconfig_env: str | None,
) -> Choice:
    """The cluster of this invocation; every mistake is a one-line `UserError`. `kubeconfig_from`:
    what gave `kubeconfig` (--kubeconfig, --in-cluster). An existing cluster is chosen by
    `existing.resolve`: `kubeconfig`, else with --provider existing every entry of $KUBECONFIG."""
    if kubeconfig or (provider_flag == "existing" and kubeconfig_env):
        env = kubeconfig_env if provider_flag == "existing" else None
        t = existing.resolve(kubeconfig, context, env=env, given_by=kubeconfig_from)
        why = "$KUBECONFIG with --provider existing" if t.chosen_by == "$KUBECONFIG" else t.chosen_by
        return Choice("existing", why, name, target=t)
    provider = provider_flag or profile.provider
    if provider == "existing":
        raise UserError(existing.NEEDS_KUBECONFIG)
    if context:
        raise UserError(
            f"--context names a context of an existing cluster's kubeconfig; add --kubeconfig PATH, or drop "
            f"--context to use the {provider} cluster"
        )
    if provider_flag:
        why = f"--provider {provider_flag}"
    elif profile_name != "default" and profile.provider != "local":
        why = f"profile {profile_name} (provider: {provider})"
    else:
        why = f"the default provider ({provider})"
    workers = int((profile.raw.get("multikueue") or {}).get("workers") or 0) if provider == "local" else 0
    unused = kubeconfig_env if not provider_flag else None  # named: the user chose it knowingly
    return Choice(provider, why, name, multikueue_workers=workers, unused_kubeconfig=unused)
