"""Back ends of the builtin P4 target: the front end's IR made runnable.

python/   the IR as generated Python source, exec'd once at load (the reference model).
"""
