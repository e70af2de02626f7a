"""The game profiles and paytables a running service serves: loaded and validated once, at start-up.

Owns: which documents are served (the operator's directory, ``[profiles] directory``, and the
shipped example profiles only with ``[profiles] allow_examples = true``), the name -> profile
lookup the outcome RPCs use (an unknown name is INVALID_ARGUMENT naming ``profile`` and the
loaded names; a withheld example says how to allow it), the list ``ListProfiles`` returns and
the lookup by name and version or by SHA-256 that ``GetProfile`` answers with the canonical
bytes. Documents never change under a running service: a new one, or a new version, needs a
restart, so every entry drawn under a name was drawn under the one profile whose SHA-256 it
records. Several versions of one name may be loaded (older ones stay available to
``GetProfile`` for the entries drawn under them); outcomes are drawn under the highest.

Must not: parse or validate documents itself (``rng_service.outcomes.profiles`` and
``rng_service.settlement.paytables`` do).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

from rng_service.errors import InvalidArgument, NotFound
from rng_service.outcomes.profiles import (
    MegaFireBlazeProfile,
    builtin_profile_names,
    load_builtin_profile,
)
from rng_service.settlement.documents import Document, document_kind, load_document_file

__all__ = ["ProfileRegistry", "document_kind"]

_ALLOW = "set [profiles] allow_examples = true (development and lab set-ups only)"


class ProfileRegistry:
    """An immutable set of validated documents: game profiles and paytables."""

    __slots__ = ("_by_key", "_by_sha", "_drawn", "_withheld")

    def __init__(
        self, documents: Iterable[Document], *, withheld_examples: Iterable[str] = ()
    ) -> None:
        by_key: dict[tuple[str, int], Document] = {}
        kinds: dict[str, str] = {}
        for d in documents:
            key = (d.id.name, d.id.version)
            if key in by_key and by_key[key].id == d.id:
                continue  # the same document twice (a shipped example copied into the directory)
            if key in by_key:
                raise InvalidArgument(
                    "profile", f"two documents named {d.id.name!r} version {d.id.version}",
                    allowed="one document per name and version",
                )  # fmt: skip
            kind = document_kind(d)
            if kinds.setdefault(d.id.name, kind) != kind:
                raise InvalidArgument(
                    "profile", f"{d.id.name!r} names both a {kinds[d.id.name]} and a {kind}",
                    allowed="one kind of document per name",
                )  # fmt: skip
            by_key[key] = d
        self._by_key: Mapping[tuple[str, int], Document] = MappingProxyType(
            dict(sorted(by_key.items()))
        )
        self._by_sha: Mapping[str, Document] = MappingProxyType(
            {d.id.sha256: d for d in self._by_key.values()}
        )
        drawn: dict[str, MegaFireBlazeProfile] = {}
        for d in self._by_key.values():  # sorted by version: the highest wins
            if isinstance(d, MegaFireBlazeProfile):
                drawn[d.id.name] = d
        self._drawn: Mapping[str, MegaFireBlazeProfile] = MappingProxyType(drawn)
        self._withheld = frozenset(withheld_examples) - set(kinds)

    @classmethod
    def load(cls, *, directory: str | Path | None, allow_examples: bool) -> ProfileRegistry:
        """The operator's documents (every ``*.toml`` of ``directory``, by file name) and, with
        ``allow_examples``, the shipped example profiles. An invalid document raises
        :class:`InvalidArgument` naming the file and key; an example document in the directory
        without ``allow_examples`` is refused the same way (field ``<file>:example``)."""
        documents: list[Document] = []
        if directory:
            folder = Path(directory)
            if not folder.is_dir():
                raise InvalidArgument(
                    "profiles.directory", f"{folder} is not a directory",
                    allowed="a directory of profile and paytable .toml files",
                )  # fmt: skip
            for path in sorted(folder.glob("*.toml")):
                document = load_document_file(path)
                if document.example and not allow_examples:
                    raise InvalidArgument(
                        f"{path.name}:example",
                        "an example document is refused",
                        allowed=f"false, or {_ALLOW}",
                    )
                documents.append(document)
        shipped = builtin_profile_names()
        if allow_examples:
            documents += [load_builtin_profile(name) for name in shipped]
            return cls(documents)
        return cls(documents, withheld_examples=shipped)

    @classmethod
    def load_builtin(cls) -> ProfileRegistry:
        """The shipped (example) profiles alone, for tests and lab tools."""
        return cls.load(directory=None, allow_examples=True)

    def get(self, name: str, field: str = "profile") -> MegaFireBlazeProfile:
        """The game profile outcomes are drawn under for ``name`` (its highest version)."""
        try:
            return self._drawn[name]
        except KeyError:
            pass
        if name in self._withheld:
            raise InvalidArgument(
                field, f"{name!r} is a shipped example profile, not served here", allowed=_ALLOW
            )
        if any(key[0] == name for key in self._by_key):
            message = f"{name[:64]!r} is a paytable, not a game profile"
        else:
            message = "is required" if not name else f"unknown profile {name[:64]!r}"
        raise InvalidArgument(
            field, message, allowed=", ".join(self._drawn) or "(no profiles loaded)"
        )

    def find(self, name: str = "", *, version: int | None = None, sha256: str = "") -> Document:
        """A loaded document by name and version, by name (the version drawn under, else the
        highest), or by SHA-256 (and name, if given); :class:`NotFound` naming the field
        otherwise."""
        if sha256:
            if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256.lower()):
                raise InvalidArgument(
                    "sha256", f"{sha256[:80]!r} is not a SHA-256", allowed="64 hex digits"
                )
            found = self._by_sha.get(sha256.lower())
            if found is not None and (not name or found.id.name == name):
                return found
            field, wanted = "sha256", sha256.lower() + (f" named {name[:64]!r}" if name else "")
        elif not name:
            raise InvalidArgument("name", "is required without sha256", allowed=self._names())
        elif version is not None:
            found = self._by_key.get((name, version))
            if found is not None:
                return found
            field, wanted = "version", f"{name[:64]!r} version {version}"
        else:
            versions = [d for (n, _), d in self._by_key.items() if n == name]
            if versions:
                return self._drawn.get(name) or versions[-1]
            field, wanted = "name", repr(name[:64])
        raise NotFound(
            f"{field}: no profile or paytable {wanted} is loaded (loaded: {self._names()})"
        )

    def _names(self) -> str:
        return ", ".join(f"{n} v{v}" for n, v in self._by_key) or "none"

    def all(self) -> tuple[Document, ...]:
        """Every document, by name then version."""
        return tuple(self._by_key.values())
