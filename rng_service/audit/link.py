"""The link form of a receipt: the verify page's URL with the receipt in its fragment.

Owns the format the page (web/verify/verify-core.js, ``receiptFromFragment``) reads and
docs/verify-page.md documents: ``BASE#receipt-z=`` followed by the unpadded base64url
(RFC 4648 section 5) of the receipt file's bytes compressed with raw DEFLATE (RFC 1951, no
zlib or gzip wrapper: what the browsers' ``DecompressionStream("deflate-raw")`` reads). A
fragment is never sent to any server (RFC 3986 section 3.5), so the receipt stays in the
browser. Links longer than :data:`MAX_FRAGMENT_CHARS` after the ``#`` are refused here and by
the page: mail and chat programs and some browsers cut such URLs, so a large receipt (a big
batch) is shared as a file instead. Pure: no I/O.
"""

from __future__ import annotations

import base64
import zlib

from rng_service.errors import InvalidArgument

__all__ = [
    "LINK_PARAM",
    "MAX_FRAGMENT_CHARS",
    "check_page_url",
    "receipt_from_link",
    "verify_link",
]

LINK_PARAM = "receipt-z"
#: The longest fragment (after ``#``) a link may have, here and in the page.
MAX_FRAGMENT_CHARS = 16384
_MAX_RECEIPT_BYTES = 1 << 20


def check_page_url(base: str) -> str:
    """``base`` as the page's URL (any fragment dropped), checked before anything is drawn.

    Raises :class:`InvalidArgument` (field ``verify_url``) when it is not an http(s) or file
    URL."""
    base = base.split("#", 1)[0]
    if not base.startswith(("http://", "https://", "file://")):
        raise InvalidArgument(
            "verify_url", f"{base!r} is not the page's URL", allowed="an http://, https:// or "
            "file:// URL of web/verify/index.html",
        )  # fmt: skip
    return base


def verify_link(base: str, receipt_json: str) -> str:
    """``base`` (the page's URL; any fragment dropped) with ``receipt_json`` in the fragment.

    Raises :class:`InvalidArgument` (field ``verify_url``) when the base is not an http(s) or
    file URL, or the link would be longer than :data:`MAX_FRAGMENT_CHARS` after the ``#``."""
    base = check_page_url(base)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(receipt_json.encode("utf-8")) + packer.flush()
    fragment = f"{LINK_PARAM}={base64.urlsafe_b64encode(packed).decode('ascii').rstrip('=')}"
    if len(fragment) > MAX_FRAGMENT_CHARS:
        raise InvalidArgument(
            "verify_url",
            f"this receipt is {len(fragment)} characters as a link, more than the "
            f"{MAX_FRAGMENT_CHARS} a link may carry; share the receipt file (--receipt-out) "
            f"instead",
        )
    return f"{base}#{fragment}"


def receipt_from_link(link: str) -> str:
    """The receipt JSON a link made by :func:`verify_link` carries (for tests and tools)."""
    _, _, fragment = link.partition("#")
    if len(fragment) > MAX_FRAGMENT_CHARS or not fragment.startswith(f"{LINK_PARAM}="):
        raise InvalidArgument("verify_url", "not a receipt link (or longer than allowed)")
    data = fragment[len(LINK_PARAM) + 1 :]
    packed = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    unpacker = zlib.decompressobj(-15)
    raw = unpacker.decompress(packed, _MAX_RECEIPT_BYTES)
    if unpacker.unconsumed_tail or not unpacker.eof:
        raise InvalidArgument("verify_url", "the link's receipt is cut short or too large")
    return raw.decode("utf-8")
