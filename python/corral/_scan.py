"""The static scan of a snippet, run by corral's runner *inside the jail* (the host never
parses the code). Defence in depth only: it reads the code's syntax tree, so it sees what
the code names, not what it computes (see README.md, "Running code", for what it misses).

scan(source, policy) -> list of findings, each a dict:
  {"line", "col", "name", "key", "message"}
where "key" is the config key whose value made it a finding (python.scan.deny_calls, ...).
policy: {"deny_calls": [glob, ...], "deny_modules": [name, ...], "deny_paths": [path, ...],
         "deny_environ": bool}. A SyntaxError propagates (the code would not run either).
"""
import ast
import fnmatch

_BUILTIN_ROOTS = ("builtins", "__builtins__")
# os.environ used in one of these ways reads one variable; any other use hands the whole
# mapping to the code (printing, copying, iterating: an environment dump).
_ENVIRON_ONE_KEY_METHODS = {"get", "setdefault", "pop", "__getitem__", "__contains__"}
_ENVIRON_NAMES = {"os.environ", "os.environb"}


def _dotted(node):
    """'a.b.c' for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class _Scanner(ast.NodeVisitor):
    def __init__(self, policy):
        self.deny_calls = list(policy.get("deny_calls", []))
        self.deny_modules = list(policy.get("deny_modules", []))
        self.deny_paths = [p.rstrip("/") or "/" for p in policy.get("deny_paths", [])]
        self.deny_environ = bool(policy.get("deny_environ", True))
        self.aliases = {}  # local name -> the dotted name it stands for
        self.parents = {}
        self.findings = []

    # ---- helpers ----
    def _add(self, node, name, key, message):
        self.findings.append({
            "line": getattr(node, "lineno", 0),
            "col": getattr(node, "col_offset", 0) + 1,
            "name": name,
            "key": key,
            "message": message,
        })

    def _resolve(self, dotted):
        root, _, rest = dotted.partition(".")
        if root in _BUILTIN_ROOTS and rest:
            return rest
        target = self.aliases.get(root, root)
        return target + ("." + rest if rest else "")

    def _denied_call(self, name):
        for pattern in self.deny_calls:
            if fnmatch.fnmatchcase(name, pattern):
                return pattern
        return None

    def _denied_module(self, module):
        for denied in self.deny_modules:
            if module == denied or module.startswith(denied + "."):
                return denied
        return None

    def _module_wholly_denied(self, module):
        return any(p == module + ".*" for p in self.deny_calls)

    def _call_finding(self, node, name, pattern):
        self._add(node, name, "python.scan.deny_calls",
                  "%s is denied (pattern %r in python.scan.deny_calls)" % (name, pattern))

    # ---- pass 1: import aliases and parents ----
    def prepare(self, tree):
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.partition(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = node.module + "." + alias.name

    # ---- pass 2: findings ----
    def visit_Import(self, node):
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node):
        if node.level != 0 or not node.module:
            return
        # Only deny_modules here: a module's denied names are checked one by one below.
        self._check_module(node, node.module, whole_module_patterns=False)
        for alias in node.names:
            if alias.name == "*":
                if any(p.startswith(node.module + ".") for p in self.deny_calls):
                    self._add(node, node.module + ".*", "python.scan.deny_calls",
                              "from %s import * brings in names denied by python.scan.deny_calls"
                              % node.module)
                continue
            full = node.module + "." + alias.name
            pattern = self._denied_call(full)
            if pattern:
                self._call_finding(node, full, pattern)

    def _check_module(self, node, module, whole_module_patterns=True):
        denied = self._denied_module(module)
        if denied:
            self._add(node, module, "python.scan.deny_modules",
                      "module %s is denied (%r in python.scan.deny_modules)" % (module, denied))
        elif whole_module_patterns and self._module_wholly_denied(module):
            self._add(node, module, "python.scan.deny_calls",
                      "module %s is denied (pattern %r in python.scan.deny_calls)"
                      % (module, module + ".*"))

    def visit_Attribute(self, node):
        dotted = _dotted(node)
        if dotted is None:
            return self.generic_visit(node)
        if self._check_name(node, self._resolve(dotted)):
            return None
        return self.generic_visit(node)

    def visit_Name(self, node):
        self._check_name(node, self._resolve(node.id))

    def _check_name(self, node, name):
        """A finding for `name` or a prefix of it; True when one was made."""
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            pattern = self._denied_call(prefix)
            if pattern:
                self._call_finding(node, prefix, pattern)
                return True
            if self.deny_environ and prefix in _ENVIRON_NAMES and end == len(parts):
                if not self._reads_one_variable(node):
                    self._add(node, prefix, "python.scan.deny_environ",
                              "%s is used whole (an environment dump); read single variables "
                              "with %s.get(NAME) or set python.scan.deny_environ: false" % (prefix, prefix))
                    return True
        return False

    def _reads_one_variable(self, node):
        parent = self.parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return True
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return parent.attr in _ENVIRON_ONE_KEY_METHODS
        if isinstance(parent, ast.Compare) and node in parent.comparators:
            return all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
        return False

    def visit_Constant(self, node):
        if not isinstance(node.value, str):
            return
        for path in self.deny_paths:
            if node.value == path or node.value.startswith(path + "/"):
                self._add(node, node.value, "python.scan.deny_paths",
                          "%r is a sensitive path (%r in python.scan.deny_paths)" % (node.value, path))
                return


def scan(source, policy):
    tree = ast.parse(source, "<snippet>")
    scanner = _Scanner(policy)
    scanner.prepare(tree)
    scanner.visit(tree)
    scanner.findings.sort(key=lambda f: (f["line"], f["col"]))
    return scanner.findings
