"""The game profiles a running service serves: loaded and validated once, at start-up.

Owns: the name -> profile lookup the outcome RPCs use (an unknown name is INVALID_ARGUMENT
naming ``profile`` and the loaded names) and the list ``ListProfiles`` returns. Profiles never
change under a running service: a new profile, or a new version, needs a restart, so every
entry drawn under a name was drawn under the one profile whose SHA-256 it records.

Must not: parse or validate profiles itself (``rng_service.outcomes.profiles`` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from rng_service.errors import InvalidArgument
from rng_service.outcomes.profiles import (
    MegaFireBlazeProfile,
    builtin_profile_names,
    load_builtin_profile,
)

__all__ = ["PROFILE_KIND", "ProfileRegistry"]

#: The game a profile is for (the only profile schema today: 617b.7).
PROFILE_KIND = "mega_fire_blaze"


class ProfileRegistry:
    """An immutable set of validated profiles, by name."""

    __slots__ = ("_profiles",)

    def __init__(self, profiles: Iterable[MegaFireBlazeProfile]) -> None:
        by_name: dict[str, MegaFireBlazeProfile] = {}
        for p in profiles:
            if p.id.name in by_name:
                raise InvalidArgument("profile", f"two profiles named {p.id.name!r}")
            by_name[p.id.name] = p
        self._profiles: Mapping[str, MegaFireBlazeProfile] = MappingProxyType(
            dict(sorted(by_name.items()))
        )

    @classmethod
    def load_builtin(cls) -> ProfileRegistry:
        """Every profile shipped in ``rng_service/profiles/``; any invalid one raises
        :class:`InvalidArgument` naming the file and key."""
        return cls(load_builtin_profile(name) for name in builtin_profile_names())

    def get(self, name: str, field: str = "profile") -> MegaFireBlazeProfile:
        try:
            return self._profiles[name]
        except KeyError:
            raise InvalidArgument(
                field,
                "is required" if not name else f"unknown profile {name[:64]!r}",
                allowed=", ".join(self._profiles) or "(no profiles loaded)",
            ) from None

    def all(self) -> tuple[MegaFireBlazeProfile, ...]:
        """Every profile, by name."""
        return tuple(self._profiles.values())
