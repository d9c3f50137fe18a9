"""How the package is put together: its import graph has no cycle, and the core meets
the front ends only through the Model's typed parts.

A cycle between modules makes the import order matter: whichever module of the
cycle is imported first sees the others half-initialised, so a name can be
missing depending on what the caller happened to import before. The graph is
read from the source with `ast` (nothing is imported), from the imports a module
runs when it is loaded: statements in the module body, including those inside
module-level `if`/`try`/`with` blocks, but not those inside functions or classes,
nor those under `if TYPE_CHECKING:`.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

PACKAGE = "mbdjax"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE


def _modules(root=ROOT, package=PACKAGE):
    """Module name -> (source path, whether it is a package `__init__`)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package,) + path.relative_to(root).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, is_package)
    return modules


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(body):
    """The `Import`/`ImportFrom` statements run when a module with this body loads."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _module_level_imports(node.orelse)
        else:
            for field in ("body", "orelse", "finalbody"):
                yield from _module_level_imports(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                yield from _module_level_imports(handler.body)
            for case in getattr(node, "cases", []):
                yield from _module_level_imports(case.body)


def _known(name, modules):
    """The module `name` is, or the nearest enclosing one inside the package; None
    outside the package."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _import_graph(modules):
    """Importing module -> set of package modules it imports at load time."""
    graph = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        edges = set()
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                           for alias in node.names]
            for target in targets:
                target = _known(target, modules)
                # (a submodule's implicit import of its parent packages is no edge; an
                # explicit import of a name defined in a parent's `__init__` is)
                if target is not None and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def _sccs(graph):
    """Strongly connected components (Tarjan), iteratively so deep graphs are fine."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def _shortest_cycle(graph, start, members):
    """A shortest path `start -> ... -> start` inside `members` (breadth first)."""
    parents, frontier = {start: None}, [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child == start:
                    path = [node]
                    while parents[path[-1]] is not None:
                        path.append(parents[path[-1]])
                    return [start] + path[::-1][1:] + [start] if node != start else [start, start]
                if child in members and child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return None


def _cycles(graph):
    """The cycles of `graph` (node -> set of successors), each as a list of nodes that
    starts and ends at the same node: for every strongly connected component with more
    than one member (or a self-edge), a shortest cycle through each member, with
    rotations of one cycle reported once."""
    cycles, seen = [], set()
    for component in _sccs(graph):
        members = set(component)
        if len(component) == 1 and component[0] not in graph.get(component[0], ()):
            continue
        for start in component:
            cycle = _shortest_cycle(graph, start, members)
            key = frozenset(zip(cycle, cycle[1:]))
            if key not in seen:
                seen.add(key)
                cycles.append(cycle)
    return cycles


def test_cycle_finder_reports_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b", "a"]]
    assert _cycles({"a": {"a"}}) == [["a", "a"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_graph_reader_sees_module_level_imports_only(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "try:\n    from .sub import leaf\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    from . import b\n"
        "def f():\n    from . import c\n"
        "class K:\n    from . import c\n")
    (pkg / "b.py").write_text("from .sub import thing\nimport pkg.c\n")
    (pkg / "c.py").write_text("from . import name_in_init\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "leaf.py").write_text("from .. import a\n")
    graph = _import_graph(_modules(pkg, "pkg"))
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.leaf"}, "pkg.b": {"pkg.sub", "pkg.c"},
                     "pkg.c": {"pkg"}, "pkg.sub": set(), "pkg.sub.leaf": {"pkg.a"}}
    assert _cycles(graph) == [["pkg.a", "pkg.sub.leaf", "pkg.a"]]


def test_package_import_graph_has_no_cycle():
    cycles = _cycles(_import_graph(_modules()))
    assert not cycles, "import cycles in the package:\n" + "\n".join(" -> ".join(c) for c in cycles)


# ---------------------------------------------------------------- front-end concepts
FRONT_ENDS = ("planar", "spatial", "network", "models")
"""The packages that own front-end concepts (and the examples, written with the front
ends as a user writes a model); every other module of mbdjax is core: the Model,
formulations, solvers, trajectories, plots and workflows."""


def _front_end_words():
    """The words only a front end may speak: the kinds of planar and spatial joints,
    rolling contacts and network elements, and the keys of their parts and
    parameters that a core module once read out of an untyped dictionary."""
    from mbdjax.planar._joints import KINDS as planar_joints
    from mbdjax.spatial._contact import OFFSETS as contact_kinds
    from mbdjax.spatial._joints import KINDS as spatial_joints

    words = set(planar_joints) | set(spatial_joints) | set(contact_kinds)
    tree = ast.parse((ROOT / "network" / "_network.py").read_text())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "_add"
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
            words.add(node.args[1].value)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "kind" for t in node.targets):
            words |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    words |= {"front_end", "contact_kinematics", "node_rate", "node_domains", "ports", "structure_problems",
              "stuck", "mu_s", "mu_k"}
    return words


def _core_modules():
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).parts[0] not in FRONT_ENDS:
            yield path


def _front_end_mentions(source, words):
    """`(line, what)` for every place in `source` that reads a model's `metadata` by
    key or names one of `words` in a string constant (docstrings excepted)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "metadata" and isinstance(node.ctx, ast.Load):
            base = node.value
            if not (isinstance(base, ast.Name) and base.id == "importlib"):
                found.append((node.lineno, "reads .metadata"))
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words
                and id(node) not in docstrings):
            found.append((node.lineno, repr(node.value)))
    return sorted(found)


def test_the_core_names_no_front_end_concept():
    """No module outside planar/, spatial/, network/ (and the examples) reads a model's metadata by
    key or names a joint, contact or network element kind (or a key of their
    parameters): the core meets the front ends only through the Model's typed parts
    (`switching`, `network`, `contacts`, `structure_problems`, `coordinate_units`)."""
    words = _front_end_words()
    assert {"revolute", "resistor", "stick_slip", "rolling_disk"} <= words   # the word list itself is read
    problems = []
    for path in _core_modules():
        for line, what in _front_end_mentions(path.read_text(), words):
            problems.append(f"{path.relative_to(ROOT.parent)}:{line}: {what}")
    assert not problems, "core modules name front-end concepts:\n" + "\n".join(problems)


def test_front_end_mentions_are_found():
    """The scan finds a metadata read and a kind named in code, and skips docstrings."""
    source = '"""A resistor."""\ndef f(model):\n    """The resistor."""\n    return model.metadata["x"], "resistor"\n'
    assert _front_end_mentions(source, {"resistor"}) == [(4, "'resistor'"), (4, "reads .metadata")]


# ---------------------------------------------------------------- private names
def _private_imports(modules):
    """`(importing module, line, "source.name")` for every import, at any depth (in
    functions too), of a private name (one underscore) that another module of the
    package defines; importing a private module (`from . import _kinematics`) is fine,
    the modules are the units of the package."""
    found = []
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")
                source = ".".join(base[:len(base) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{source}.{alias.name}" not in modules and source != name:
                    found.append((name, node.lineno, f"{source}.{alias.name}"))
    return found


def test_no_module_imports_another_modules_private_names():
    """A name with a leading underscore is its module's own: another module that needs
    it gets a public name (or the helper moves to where both can reach it), so a
    change to a private helper cannot break a distant module."""
    found = _private_imports(_modules())
    assert not found, "private names imported across modules:\n" + "\n".join(
        f"{m}:{line}: {what}" for m, line, what in found)


def test_private_imports_are_found(tmp_path):
    """The scan flags `from .a import _helper` (in a function too) and passes a private
    submodule."""
    pkg = tmp_path / PACKAGE
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_a.py").write_text("def _helper():\n    pass\n")
    (pkg / "b.py").write_text("from . import _a\n\ndef f():\n    from ._a import _helper\n    return _helper\n")
    assert _private_imports(_modules(pkg, PACKAGE)) == [(f"{PACKAGE}.b", 4, f"{PACKAGE}._a._helper")]


# ---------------------------------------------------------------- imports inside functions
_DIRECTIVES = re.compile(r"noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?"
                         r"|pragma:\s*no\s+(cover|branch)", re.IGNORECASE)


def _reason(comment):
    """Whether a comment says something beyond linter directives (`noqa: F401` alone is
    no reason)."""
    return re.search(r"[A-Za-z]", _DIRECTIVES.sub("", comment)) is not None


def _uncommented_function_imports(source):
    """`(line, statement)` for every `import` inside a function (at any depth: methods,
    nested functions, under `if`/`try`) with no reason given: no comment on its own
    line(s), none on a comment-only line directly above it, and not in a run of import
    statements (consecutive statements of one block, blank lines between them allowed)
    whose previous import has one: a comment over an import block covers the block."""
    lines = source.splitlines()
    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and _reason(token.string.lstrip("#")):
            comments[token.start[0]] = token.string
    own_line = {n for n in comments if lines[n - 1].lstrip().startswith("#")}

    def commented(node):
        return (any(n in comments for n in range(node.lineno, node.end_lineno + 1))
                or node.lineno - 1 in own_line)

    found = []

    def visit(node, in_function):
        in_function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        blocks = [getattr(node, field) for field in ("body", "orelse", "finalbody")
                  if isinstance(getattr(node, field, None), list)]
        blocks += [handler.body for handler in getattr(node, "handlers", [])]
        blocks += [case.body for case in getattr(node, "cases", [])]
        for block in blocks:
            covered = False           # the previous statement is an import with a reason
            for statement in block:
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    covered = covered or commented(statement)
                    if in_function and not covered:
                        found.append((statement.lineno, ast.unparse(statement)))
                else:
                    covered = False
                    visit(statement, in_function)

    visit(ast.parse(source), False)
    return found


def test_every_import_inside_a_function_says_why():
    """Imports go at the top of the module. One that stays inside a function (JAX or an
    optional library kept out of `import mbdjax` and `mbdjax list`, a heavy library
    loaded on first use, an import cycle) carries a comment saying why, on its line or
    on the line above (`# on first use: ...`, `# here, not at the top: ... (cycle)`)."""
    found = []
    for name, (path, _) in _modules().items():
        for line, statement in _uncommented_function_imports(path.read_text(encoding="utf-8")):
            found.append(f"{name}:{line}: {statement}")
    assert not found, "imports inside functions with no comment saying why:\n" + "\n".join(found)


def test_uncommented_function_imports_are_found():
    """The scan flags an import in a function (method, nested function) with no reason
    given, passes one with a comment on its line or above (which covers the import block
    below it), and ignores module-level imports and linter directives."""
    source = (
        "import os\n"                              # 1  module level: not flagged
        "def f():\n"
        "    import json\n"                        # 3  flagged
        "    x = 1  # a comment on code\n"
        "    import csv\n"                         # 5  flagged: the comment above is on code
        "    # on first use: heavy\n"
        "    import numpy\n"                       # 7  passes
        "\n"
        "    import numpy.linalg\n"                # 9  passes: the block's comment
        "    y = 2\n"
        "    import scipy  # noqa: F401\n"         # 11 flagged: a directive is no reason
        "    import re  # here: a cycle\n"         # 12 passes
        "class K:\n"
        "    def m(self):\n"
        "        def inner():\n"
        "            if True:\n"
        "                from . import a\n"        # 17 flagged
        "        return inner\n"
    )
    assert [line for line, _ in _uncommented_function_imports(source)] == [3, 5, 11, 17]
    assert _uncommented_function_imports("def f():\n    import json  # on first use: rarely needed\n") == []


# ---------------------------------------------------------------- trace-time globals
def _context_variables(modules):
    """`(module, line)` of every use of `contextvars` in the package."""
    found = []
    for name, (path, _) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import) and any(a.name == "contextvars" for a in node.names):
                found.append((name, node.lineno))
            elif isinstance(node, ast.ImportFrom) and node.module == "contextvars":
                found.append((name, node.lineno))
    return found


def test_no_context_variables_decide_what_is_traced():
    """What a trace computes is decided by its arguments and the modules' static fields,
    never by a context variable set around it (the block solves of the projection, the
    failure report of a batch member, the run-time checks' sink are all arguments): a
    function traced twice with the same arguments traces the same program."""
    found = _context_variables(_modules())
    assert not found, "context variables in the package:\n" + "\n".join(f"{m}:{line}" for m, line in found)


def test_context_variables_are_found(tmp_path):
    pkg = tmp_path / PACKAGE
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import contextvars\nFLAG = contextvars.ContextVar('flag', default=False)\n")
    assert _context_variables(_modules(pkg, PACKAGE)) == [(f"{PACKAGE}.a", 1)]
