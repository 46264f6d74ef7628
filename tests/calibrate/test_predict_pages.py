"""``plain_pages``: numpy's huge-page advice off inside the block, restored after it."""

import pytest

from calibrate._predict._pages import _switch, plain_pages


def _advice() -> bool:
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray
    return bool(multiarray.__dict__["_get_madvise_hugepage"]())  # private: not in the stubs


@pytest.mark.skipif(_switch() is None, reason="this numpy has no huge-page switch")
@pytest.mark.parametrize("before", [True, False])
def test_advice_off_inside_and_restored_after(before):
    switch = _switch()
    assert switch is not None
    old = switch(before)
    try:
        with plain_pages():
            assert _advice() is False
        assert _advice() is before
        with pytest.raises(RuntimeError), plain_pages():
            raise RuntimeError("inside")
        assert _advice() is before  # restored when the block raises
        first, second = plain_pages(), plain_pages()  # overlapping calls (two threads)
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert _advice() is False  # the second still runs
        second.__exit__(None, None, None)
        assert _advice() is before  # the setting the first one found
    finally:
        switch(old)
