"""Which platforms have a built-in: the typed error for a built-in the platform lacks (issue 21 item 8)."""

from __future__ import annotations

from ..errors import UnsupportedCombination

__all__ = ["unsupported_on"]


def unsupported_on(name: str, platform) -> UnsupportedCombination:
    """The typed error for a built-in the platform lacks, naming where it exists."""
    from ..opencl import mapping as MP
    from ..opencl import table as TB
    from ..xmx.platform import PLATFORMS
    where = [p for p in PLATFORMS if any(MP.available(r, PLATFORMS[p]) is None for r in TB.by_name(name))]
    if not where and name.startswith("intel_sub_group_2d_block_"):
        from .blockio2d import supported
        where = [p for p, P in PLATFORMS.items() if supported(P)]
    return UnsupportedCombination(f"{name} is not available on {platform.name}",
                                  rule="the platform's built-ins (systolic opencl list --platform P)",
                                  values={"function": name, "platform": platform.name, "available_on": where})
