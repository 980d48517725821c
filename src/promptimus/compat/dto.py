"""promptimus 0.1's names on the plain data types: `SearchHit` read as ``idx`` and ``content``
(0.1's names for ``id`` and ``document``, on every store's hits, without a warning), and
``ImageContent.from_buffer(mimetype=...)`` (warned; today ``mime_type=``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from promptimus.dto import SearchHit

__all__ = ["from_buffer_arguments", "search_hit_document", "search_hit_id"]


def search_hit_id(hit: SearchHit) -> str:
    """The document's id (0.1's name for `SearchHit.id`)."""
    return hit.id


def search_hit_document(hit: SearchHit) -> str:
    """The document's text (0.1's name for `SearchHit.document`)."""
    return hit.document


def from_buffer_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`ImageContent.from_buffer`'s translator: ``mimetype=`` is ``mime_type=``."""
    if "mimetype" not in kwargs:
        return args, kwargs
    kwargs = dict(kwargs)
    kwargs["mime_type"] = kwargs.pop("mimetype")
    warnings.warn(
        "ImageContent.from_buffer(mimetype=...) is deprecated; use mime_type=... instead.",
        DeprecationWarning,
        stacklevel=3,
    )
    return args, kwargs
