"""Test helpers shared by tests/unit and tests/e2e (never test modules themselves)."""
