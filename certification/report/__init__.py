"""Report rendering for the certification suite: JSON documents and text summaries; the only
I/O is :func:`write_json` streaming a document to a handle it is given."""

from certification.report.sp800_22 import render_json, render_summary, write_json

__all__ = ["render_json", "render_summary", "write_json"]
