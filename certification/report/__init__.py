"""Report rendering for the certification suite: JSON documents and text summaries, no I/O."""

from certification.report.sp800_22 import render_json, render_summary

__all__ = ["render_json", "render_summary"]
