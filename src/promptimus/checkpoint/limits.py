"""The documented size and depth limits of module trees, values and checkpoints.

Every walk over a tree, a value or a checkpoint stays far below Python's recursion limit because
nothing deeper than these limits can exist: registration refuses a tree deeper than
`MAX_MODULE_DEPTH` (`ModuleTooDeep`), a parameter refuses a value whose lists nest deeper than
`MAX_VALUE_DEPTH` (`InvalidParameterValue`), and loading refuses a checkpoint that nests deeper
than either (`CheckpointTooDeep`) before anything walks it. Real trees are a handful of levels
deep; the limits only stop runaway or hostile input with a named error instead of a raw
`RecursionError`.
"""

__all__ = [
    "DEFAULT_MAX_EXPANDED_CHARS",
    "DEFAULT_MAX_FILE_BYTES",
    "MAX_MODULE_DEPTH",
    "MAX_VALUE_DEPTH",
]

# Modules on the longest path below a root, the root not counted: `root.a.b` is 2 deep.
MAX_MODULE_DEPTH = 100
# Lists inside lists in one parameter value: `[[1]]` is 2 deep, a scalar 0.
MAX_VALUE_DEPTH = 32
# Bytes read from one file: the checkpoint itself or a `${file:}`/`${pkg:}` target.
DEFAULT_MAX_FILE_BYTES = 32 * 1024 * 1024
# Characters of values (plus one per key) in a checkpoint with every reference expanded: a file
# referenced from many places counts at each place, so nested references cannot multiply a few
# small files into gigabytes.
DEFAULT_MAX_EXPANDED_CHARS = 64 * 1024 * 1024
