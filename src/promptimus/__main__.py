"""`python -m promptimus`: the command line (see `promptimus.cli`)."""

from promptimus.cli import main

raise SystemExit(main())
