"""``rng-certify``'s entry point: checks that the ``certify`` extra is installed, then runs
:func:`certification.cli.main`.

The statistics (scipy) and the HTML report (jinja2) are not dependencies of the service, so an
installation without the extra (the service's container image, ``pip install rng-service``)
has the ``rng-certify`` script but not what it needs. Without this check the script would die
with a traceback from deep inside the first import; with it, it exits 2 (a usage error,
:mod:`certification.verdict`) with one line naming the missing module and the extra to
install. Nothing beyond the standard library and :mod:`certification.verdict` is imported
until the check has passed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from certification.verdict import EXIT_USAGE

__all__ = ["EXTRA_INSTALL", "main", "missing_certify_module"]

#: How to install what ``rng-certify`` needs beyond the service's own dependencies.
EXTRA_INSTALL = "pip install 'rng-service[certify]'"


def missing_certify_module() -> str | None:
    """The first module of the ``certify`` extra that cannot be imported, or None."""
    try:
        import jinja2  # noqa: F401
        import scipy.fft
        import scipy.special
        import scipy.stats  # noqa: F401
    except ModuleNotFoundError as e:
        return e.name or str(e)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    missing = missing_certify_module()
    if missing is not None:
        print(
            f"rng-certify: error: the certification suite needs the 'certify' extra "
            f"({missing} is not installed): {EXTRA_INSTALL}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from certification.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
