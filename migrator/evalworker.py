"""The evaluator's worker process (`python -c "from migrator.evalworker import serve; serve()"`), started by
migrator/evaluate.py. It imports nothing of migrator's own: its start is on the path of the first question a plan
asks, and the standard library it needs is a few modules.
"""
import os
import pickle
import struct
import sys


def serve() -> None:
    """One root module path per line on stdin, for each a length-prefixed pickle of tfparse's answer (None when it
    raises) on the protocol stream. Its stderr and stdout go to /dev/null (the answers travel on a copy of stdout): a
    Go panic (tfparse aborts its process on some modules: "can't use ElementIterator on null value") ends the worker,
    never migrator, and prints no Go trace over the plan."""
    proto = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    import tfparse
    for line in sys.stdin.buffer:
        try:
            out = tfparse.load_from_path(line.decode().rstrip("\n"))
        except Exception:               # noqa: BLE001 - a module it cannot evaluate: nothing is known from it
            out = None
        data = pickle.dumps(out)
        proto.write(struct.pack(">Q", len(data)) + data)
        proto.flush()
