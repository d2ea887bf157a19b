# SPDX-License-Identifier: BSD-3-Clause
"""Shared fixtures of the Python tests.

test_cpu.py runs as N identical pytest processes, one per rank (tests/python/run
starts them with monelrun, which sets MONEL_RANK, MONEL_NRANKS and a shared
NCCL_COMM_ID). Every rank runs the same tests in the same order, so the
collective calls of one test meet those of the same test on the other ranks. A
test must never skip a collective on some ranks only: a rank that raised before
its call would leave the others waiting. The watchdog below ends a rank stuck
longer than MONEL_PYTEST_TIMEOUT seconds (default 120); its peers then see a
closed connection and fail instead of hanging.
"""

import faulthandler
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# MONEL_TEST_INSTALLED=1: test the installed package (a wheel in this environment), never the
# source tree's python/ directory.
INSTALLED = os.environ.get("MONEL_TEST_INSTALLED") == "1"
if not INSTALLED:
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import monel  # noqa: E402

if INSTALLED:
    assert os.path.abspath(monel.__file__).startswith(sys.prefix + os.sep), (
        f"MONEL_TEST_INSTALLED=1 but monel comes from {monel.__file__}, not from {sys.prefix}"
    )

RANK = int(os.environ.get("MONEL_RANK", "0"))
NRANKS = int(os.environ.get("MONEL_NRANKS", "1"))
TIMEOUT = float(os.environ.get("MONEL_PYTEST_TIMEOUT", "120"))


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(TIMEOUT, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="session")
def rank():
    return RANK


@pytest.fixture(scope="session")
def nranks():
    return NRANKS


@pytest.fixture(scope="session")
def comm():
    c = monel.Communicator.init(NRANKS, RANK, monel.get_unique_id())
    yield c
    c.destroy()


# Messages of an engine that lacks an operation (it is coming): a test of that
# operation is an expected failure until the engine has it, then it passes.
UNSUPPORTED = ("does not support", "not supported yet", "does not know this operation")


def unsupported(exc):
    return isinstance(exc, monel.MonelError) and any(m in str(exc) for m in UNSUPPORTED)


@pytest.fixture
def engine_may_lack():
    """Call fn(); if the engine says it does not support the operation, xfail."""

    def run(fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except monel.MonelError as e:
            if unsupported(e):
                pytest.xfail(f"engine does not support it yet: {e}")
            raise

    return run
