"""The test suite. Imported before conftest.py and every test module, so what it sets holds for all of them.

The tests keep the bytecode of what they import where Python keeps it by default (a ``__pycache__`` folder beside
each source, which .gitignore leaves out), even where PYTHONDONTWRITEBYTECODE is set. Without it every test worker
compiled the package and rewrote the test modules' assertions again at every run, and every command the tests start
compiled the package again: about 40 s of the test command's CPU (docs/development.md). Set here, before anything
imports the package, so its modules are kept too.
"""

import sys

sys.dont_write_bytecode = False
