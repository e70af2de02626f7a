"""Generates rng_service/_proto from proto/ with grpcio-tools (offline).

``python scripts/gen_proto.py`` writes the files; ``--check`` exits 1 if regenerating would
change them (a test runs it). Imports inside the generated files are rewritten to be
package-relative so the code stays in its private package.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
OUT_DIR = ROOT / "rng_service" / "_proto"
HEADER = '"""Generated code; do not edit. Regenerate with `make proto`."""\n'


def generate(out: Path) -> None:
    from grpc_tools import protoc  # type: ignore[import-untyped]

    protos = sorted(str(p.relative_to(PROTO_DIR)) for p in PROTO_DIR.rglob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    for path in out.rglob("*_pb2*.py*"):
        text = path.read_text()
        text = re.sub(r"^from rng\.v1 import", "from . import", text, flags=re.M)
        path.write_text(text)
    for d in [out, *[p for p in out.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").write_text(HEADER)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if not args.check:
        generate(OUT_DIR)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        fresh = {p.relative_to(tmp): p.read_bytes() for p in Path(tmp).rglob("*") if p.is_file()}
        have = {
            p.relative_to(OUT_DIR): p.read_bytes()
            for p in OUT_DIR.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        if fresh != have:
            changed = sorted(str(k) for k in set(fresh) ^ set(have)) + sorted(
                str(k) for k in set(fresh) & set(have) if fresh[k] != have[k]
            )
            print(f"generated code is stale: {changed}; run `make proto`", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
