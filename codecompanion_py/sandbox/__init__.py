"""Commands the LLM or an agent starts, confined: what they may read, write and reach.

* `policy`: the user's `sandbox` options as one `SandboxPolicy` (the default deny list).
* `confine`: the policy's paths resolved against the filesystem (`Confinement`).
* `bubblewrap`, `landlock`: the two Linux mechanisms.
* `proxy` (in the engine) and `relay` (in the sandbox): the network of a host list.
* `launch`: which mechanism this machine has (`available`), and a command made sandboxed
  (`Sandbox.launch`).
* `hints`: whether a failed command's output says it lacked the network.
"""

from __future__ import annotations

from .launch import Availability, Launch, Sandbox, available
from .policy import SandboxPolicy

__all__ = ["Availability", "Launch", "Sandbox", "SandboxPolicy", "available"]
