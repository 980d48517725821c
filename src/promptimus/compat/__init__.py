"""promptimus 0.1's spellings, aliases and shims: code written for 0.1 keeps working, and the
main modules carry no branch for it (they reach this package by name, through
`promptimus._compat_seam`)."""
