"""The progress bar of `evaluate`: tqdm's, when it is installed and someone can see it.

`progress=True` means "show progress where it can be seen": on a terminal (stderr is a tty) or
in a Jupyter kernel, with `tqdm.auto` (a widget in notebooks when ipywidgets is there, text
otherwise). tqdm is an optional extra (`pip install promptimus[evals]`); without it, or when
stderr goes to a file or a pipe (CI logs, test runs), there is no bar — progress output must
never be the reason an evaluation fails or a log fills up. Where a bar could be seen but tqdm is
missing, one line on stderr says how to get it (once per process). tqdm is imported only here,
and only when a bar is shown.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any, Protocol

__all__ = ["ProgressBar", "open_progress"]

log = logging.getLogger("promptimus.evals")
_warned = False


class ProgressBar(Protocol):
    def update(self, n: int = 1) -> Any: ...

    def set_postfix_str(self, text: str) -> Any: ...

    def close(self) -> Any: ...


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def _visible() -> bool:
    stream = sys.stderr
    with contextlib.suppress(Exception):
        if stream is not None and stream.isatty():
            return True
    shell = sys.modules.get("IPython")
    with contextlib.suppress(Exception):
        ipython = shell.get_ipython() if shell is not None else None
        return ipython is not None and "IPKernelApp" in ipython.config
    return False


def _hint(text: str) -> None:
    """One line for the person watching (stderr, where the bar would have been), and the log."""
    log.info(text)
    with contextlib.suppress(Exception):  # a closed or missing stderr never fails a run
        sys.stderr.write(f"promptimus: {text}\n")
        sys.stderr.flush()


def open_progress(total: int, enabled: bool, description: str = "evaluate") -> ProgressBar:
    """A bar counting `total` steps, or one that does nothing (see the module docstring)."""
    global _warned
    if not enabled or not _visible():
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if not _warned:
            _warned = True
            _hint("install tqdm (pip install 'promptimus[evals]') to see a progress bar")
        return _NoBar()
    try:
        bar: ProgressBar = tqdm(total=total, desc=description, unit="ex", file=sys.stderr)
    except ImportError:  # tqdm.notebook without ipywidgets: fall back to the text bar
        from tqdm.std import tqdm as text_tqdm

        bar = text_tqdm(total=total, desc=description, unit="ex", file=sys.stderr)
    return bar
