"""The export reader's entry lines (``ExportReader.entry_rows``): its fast parse must read every
line exactly as ``json.loads`` does, or fail as it does, whatever the spelling of the line.

The reference here is ``json.loads`` plus the field rules of docs/log-format.md ("Export
format"), written in the test: a line reads as (index, leaf hash, entry bytes) when it is one
JSON object with an integer ``index``, a 64-hex ``leaf_hash`` and a base64 ``entry``.
"""

from __future__ import annotations

import base64
import io
import json

import pytest

from rng_service.audit.export import EXPORT_FORMAT, ExportFormatError, ExportReader

ENTRY = b'{"v":1}'
LEAF = "ab" * 32
B64 = base64.b64encode(ENTRY).decode()
GOOD = f'{{"type":"entry","index":0,"leaf_hash":"{LEAF}","entry":"{B64}"}}'

SPELLINGS = [
    GOOD + "\n",
    GOOD,  # the last line of a file without its newline
    GOOD + "\r\n",
    " " + GOOD + "\n",
    GOOD + "  \n",
    "\ufeff" + GOOD + "\n",  # json.loads refuses a BOM
    GOOD + "x\n",
    GOOD + GOOD + "\n",
    GOOD.replace('"index":0', '"index":7,"index":0') + "\n",  # a repeated member: the last
    GOOD.replace('"index"', '"\\u0069ndex"') + "\n",  # an escaped name
    GOOD.replace('{"type"', '{ "type"') + "\n",
    "[" + GOOD + "]\n",
    '"' + LEAF + '"\n',
    "\n",
]


def _reference(text: str) -> tuple[int, bytes, bytes] | None:
    """What the line holds by json.loads and the format's rules; None if it is not an entry
    line."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or obj.get("type") != "entry":
        return None
    index, leaf, entry = obj.get("index"), obj.get("leaf_hash"), obj.get("entry")
    if type(index) is not int or not isinstance(leaf, str) or not isinstance(entry, str):
        return None
    return index, bytes.fromhex(leaf), base64.b64decode(entry, validate=True)


@pytest.mark.parametrize("text", SPELLINGS)
def test_an_entry_line_reads_as_json_loads_reads_it(text: str) -> None:
    header = {"format": EXPORT_FORMAT, "origin": "o", "tree_size": 1, "checkpoints": 0}
    reader = ExportReader(io.StringIO(json.dumps(header) + "\n" + text))
    expected = _reference(text)
    if expected is None:
        with pytest.raises(ExportFormatError, match=r"^line 2: "):
            list(reader.entry_rows())
        return
    assert list(reader.entry_rows()) == [(2, *expected)]
