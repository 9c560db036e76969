"""`python -m migrator`: the same command line as `migrator`."""
from .cli import main

main()
