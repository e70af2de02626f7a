"""Certification suite: NIST SP 800-22 battery and outcome-level tests for gaming labs."""

__all__: list[str] = []
