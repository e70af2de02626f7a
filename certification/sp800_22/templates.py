"""Aperiodic templates for the non-overlapping template matching test (SP 800-22 section 2.7).

A template is aperiodic when no proper prefix equals the suffix of the same length, so that two
occurrences can never overlap. sts-2.1.2 reads them from ``templates/template<m>``; that file
lists every aperiodic m-bit word in increasing binary order, which is what
:func:`aperiodic_templates` generates (148 words for m = 9).
"""

from __future__ import annotations

from functools import cache

__all__ = ["aperiodic_templates", "is_aperiodic"]

# Counts of aperiodic templates by length, from ``numOfTemplates`` in sts-2.1.2.
REFERENCE_COUNTS = {2: 2, 3: 4, 4: 6, 5: 12, 6: 20, 7: 40, 8: 74, 9: 148, 10: 284}


def is_aperiodic(template: str) -> bool:
    """True if no proper prefix of ``template`` is also its suffix."""
    m = len(template)
    return all(template[:k] != template[m - k :] for k in range(1, m))


@cache
def aperiodic_templates(m: int) -> tuple[str, ...]:
    """Every aperiodic m-bit template, in the order of the reference's template file."""
    if not 2 <= m <= 21:
        raise ValueError(f"template length must be between 2 and 21, got {m}")
    words = (format(value, f"0{m}b") for value in range(2**m))
    return tuple(word for word in words if is_aperiodic(word))
