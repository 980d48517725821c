"""What a reply's JSON that cannot be read raised, named as a `MalformedReply`.

``json.loads`` fails on a ``200`` body in more ways than ``JSONDecodeError``: bytes that are not
UTF-8 (``UnicodeDecodeError``), nesting deeper than the interpreter's recursion limit
(``RecursionError``), an integer longer than Python converts (``ValueError``, past 4,300
digits). The SDK's typed methods raise them as they are and so does the transport (a failure
must look the same whichever way a request went); the retry layer names each with
`unreadable`, as it names a body that is not JSON.
"""

from __future__ import annotations

from promptimus.errors import MalformedReply

__all__ = ["not_json", "undecodable", "unreadable"]

_TOO_MANY_DIGITS = "integer string conversion"  # in Python's ValueError for a long integer


def not_json(exc: BaseException) -> bool:
    """Whether decoding failed because the bytes are no JSON text at all (rather than JSON
    Python cannot hold): a page in another format may still be shown as text."""
    return type(exc).__name__ == "JSONDecodeError" or isinstance(exc, UnicodeDecodeError)


def undecodable(exc: BaseException) -> bool:
    """Whether ``exc`` is one of the ways decoding a reply's JSON fails."""
    return (
        not_json(exc)
        or isinstance(exc, RecursionError)
        or (type(exc) is ValueError and _TOO_MANY_DIGITS in str(exc))
    )


def unreadable(exc: BaseException) -> MalformedReply:
    """The `MalformedReply` for a reply whose decoding raised ``exc`` (see `undecodable`)."""
    if isinstance(exc, UnicodeDecodeError):
        bad = exc.object[exc.start : exc.start + 1].hex()
        return MalformedReply(
            f"the body is not UTF-8 text (byte 0x{bad} at position {exc.start} cannot be decoded)"
        )
    if isinstance(exc, RecursionError):
        return MalformedReply("the body nests JSON arrays or objects too deeply to be read")
    if isinstance(exc, ValueError) and not not_json(exc):
        return MalformedReply(f"the body holds a number too long to be read ({exc})")
    return MalformedReply(f"the body is not valid JSON ({exc})")
