"""Programs the tests run inside jobs to check what a job sees; never shipped with the
console. ``check_env.py``: a framework's environment (see its docstring)."""

from pathlib import Path

CHECK_ENV = Path(__file__).resolve().parent / "check_env.py"
