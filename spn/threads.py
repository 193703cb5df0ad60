"""Pieces of one answer run side by side on the process's cores: the compiled simulator and SciPy's sparse
products release the GIL, so threads share the work without copying it to other processes.

>>> side_by_side([lambda: 1 + 1, lambda: 2 * 3, lambda: 7])
[2, 6, 7]
"""

from __future__ import annotations

import threading

from spn.limits import available_cores

__all__ = ["side_by_side"]


def side_by_side(calls: list, *, stop: threading.Event | None = None) -> list:
    """Each of ``calls`` (functions of no arguments) run once, on as many threads as the process has cores,
    the calling thread one of them; each thread takes the next call in the list's order as soon as it is
    free, so put the longest first. Their results, in the list's order.

    Where one raises, or Ctrl-C comes, no further call starts, ``stop`` is set (calls that look at it end
    early), and the error is raised as soon as the calling thread's own call returns, without waiting for
    the other threads' (they are daemons: they never hold the process open)."""
    stop = stop if stop is not None else threading.Event()
    results, errors = [None] * len(calls), []
    queue, lock = iter(enumerate(calls)), threading.Lock()

    def work() -> None:
        while not stop.is_set():
            with lock:
                item = next(queue, None)
            if item is None:
                return
            try:
                results[item[0]] = item[1]()
            except BaseException as error:          # Ctrl-C included: the others stop too
                errors.append(error)
                stop.set()
                return

    helpers = [threading.Thread(target=work, daemon=True) for _ in range(min(available_cores(), len(calls)) - 1)]
    for thread in helpers:
        thread.start()
    try:
        work()
        if not errors:
            for thread in helpers:
                thread.join()
    except BaseException:       # Ctrl-C while waiting for the others
        stop.set()
        raise
    if errors:
        raise errors[0]
    return results
