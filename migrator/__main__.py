"""`python -m migrator`: the same command line as `migrator`."""
from .cli import run

if __name__ == "__main__":      # never again in a process the evaluator's worker is spawned from
    run()
