"""Every SVM test ends with ``svm.cleanup()``, so no processor thread outlives its test."""

from __future__ import annotations

import pytest

from hpvm import svm


@pytest.fixture(autouse=True)
def _svm_cleanup():
    yield
    svm.cleanup()


@pytest.fixture
def tiled():
    """The shipped PCA-like machine, in assertion mode."""
    return svm.init("pca_tiled", check=True)


@pytest.fixture
def computer():
    """ "This computer" with two stream processors, assertion mode off."""
    return svm.init(svm.this_computer(cores=2))
