"""Generated code; do not edit. Regenerate with `make proto`."""
