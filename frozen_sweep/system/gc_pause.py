"""Python's cyclic garbage collector paused while thousands of long-lived objects are built (a sweep's planned jobs,
a collection's records): each of its full passes walks every object built so far, and none of them is garbage."""

import contextlib
import gc


@contextlib.contextmanager
def no_cyclic_gc():
    """The collector off inside the block, back as it was after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
