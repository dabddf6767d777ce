"""The import allow-list (python.allowlist), installed by corral's runner inside the jail
before the snippet runs. Only imports made *by the snippet's own code* are checked, by their
top-level name; the modules it imports keep importing what they need (json imports re, ...).

Two hooks, because neither sees every import alone:
  * builtins.__import__ (the `import` statement): its `globals` argument says which module
    imports, and it is called even for modules already loaded (os, sys, ...);
  * a sys.meta_path finder, first in the list: importlib.import_module() bypasses
    __import__, so the finder looks up the stack for the frame that asked.
"""
import builtins
import sys

ALWAYS_ALLOWED = frozenset({"corral"})  # corral.secure_command is how the snippet runs tools


def _refusal(top):
    return ImportError("module %r is not allowed (python.allowlist)" % top, name=top)


class _AllowListFinder:
    def __init__(self, allowed, user_globals, skip_codes):
        self._allowed = allowed
        self._user_globals = user_globals
        self._skip_codes = skip_codes

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in self._allowed:
            return None
        frame = sys._getframe(1)
        while frame is not None and self._is_import_machinery(frame):
            frame = frame.f_back
        if frame is not None and frame.f_globals is self._user_globals:
            raise _refusal(top)
        return None

    def _is_import_machinery(self, frame):
        code = frame.f_code
        if code in self._skip_codes:
            return True
        filename = code.co_filename
        return filename.startswith("<frozen importlib") or "/importlib/" in filename


def install(allowlist, user_globals):
    """Restricts the snippet (the code run with `user_globals`) to `allowlist`'s top-level
    modules. An empty allow-list restricts nothing."""
    if not allowlist:
        return
    allowed = frozenset(allowlist) | ALWAYS_ALLOWED
    original = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and globals is user_globals:
            top = name.partition(".")[0]
            if top not in allowed:
                raise _refusal(top)
        return original(name, globals, locals, fromlist, level)

    finder = _AllowListFinder(allowed, user_globals, {guarded_import.__code__, install.__code__})
    builtins.__import__ = guarded_import
    sys.meta_path.insert(0, finder)
