"""tests/cl: systolic.cl needs a clang (the ziglang wheel of the 'clang' extra, or one on PATH)."""
import pytest

from systolic.errors import ClangUnavailable


def _have_clang() -> bool:
    try:
        from systolic.llvmir.clang import find_clang
        find_clang()
        return True
    except ClangUnavailable:
        return False


HAVE_CLANG = _have_clang()


def pytest_collection_modifyitems(config, items):
    if HAVE_CLANG:
        return
    skip = pytest.mark.skip(reason="no clang: pip install 'systolic[clang]'")
    for it in items:
        if "tests/cl/" in str(it.fspath).replace("\\", "/") and "no_clang" not in it.keywords:
            it.add_marker(skip)
