"""Fixtures of the lab tests (helpers live in lab_helpers.py)."""

import pytest

from lab_helpers import standin_environ


@pytest.fixture
def standin_env(tmp_path):
    """Environment for running the stand-in on the host: private HF cache, fast, no sleeping."""
    return standin_environ(tmp_path)
