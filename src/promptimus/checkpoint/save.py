"""Saving a checkpoint: a new file gets the writer's text (fast, no TOML library involved); over
an existing file the values are updated in place (`update`). Either way the write is atomic and
the result carries the format mark. An existing file that is not a TOML checkpoint is left as it
is (see `update`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import CheckpointError, CheckpointWriteError, FileTooLarge, NotARegularFile
from .files import atomic_write_text, read_regular_file
from .update import not_toml, update_checkpoint_text
from .write import checkpoint_text

__all__ = ["save_checkpoint"]


def save_checkpoint(path: Path, data: Mapping[str, Any], keep_comments: bool = True) -> None:
    """Write `data` to `path` atomically; over an existing file, keep what the user wrote in it
    (unless `keep_comments=False`, which writes a fresh file)."""
    old_text = None
    try:
        # read even with keep_comments=False: a folder, FIFO or device there is refused before
        # anything is written (opening a FIFO this way never blocks)
        old = read_regular_file(path, None if keep_comments else 0)
        old_text = old.decode("utf-8") if keep_comments else None
    except FileNotFoundError:
        pass
    except FileTooLarge:  # only with keep_comments=False: any regular file is replaced
        pass
    except NotARegularFile as exc:
        raise CheckpointWriteError(
            f"Cannot save checkpoint {path}: the path {exc.reason}; save to a file path "
            "(inside that folder, if it is one)."
        ) from None
    except UnicodeDecodeError as exc:
        raise not_toml(str(path), f"not UTF-8 text: {exc.reason}") from None
    except OSError as exc:
        if keep_comments:
            raise CheckpointError(
                f"Cannot save over {path}: it cannot be read ({exc.strerror or exc}). Check the "
                "path and its permissions."
            ) from None
    if old_text is None:
        text = checkpoint_text(data)
    else:
        text = update_checkpoint_text(old_text, data, path)
    atomic_write_text(path, text)
