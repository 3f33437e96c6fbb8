#!/usr/bin/env python3
"""The gj package has no import circle, and gj.common imports no framework.

Reads every module of the package with `ast` (nothing is imported, so neither torch nor
TensorFlow is needed) and follows every import of a gj module, at module level and inside
functions alike: a lazy import inside a function is still a circle a reader has to untangle.
Usage: import_graph.py <package dir, e.g. collectives/python/gj>; exits 1 naming each circle.
"""

import ast
import pathlib
import sys

FRAMEWORKS = ("torch", "tensorflow", "keras", "tf_keras")


def modules(root):
    """{dotted name: path} of every module under the package folder root."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name, path, known):
    """The gj modules module `name` imports, and the top-level packages outside gj it imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    inside, outside = set(), set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                (inside if alias.name in known else outside).add(alias.name if alias.name in known
                                                                 else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
                if target.split(".")[0] != "gj":
                    outside.add(target.split(".")[0])
                    continue
            # `from pkg import sub` imports the submodule; `from mod import name` the module.
            subs = {f"{target}.{a.name}" for a in node.names} & set(known)
            inside |= subs or {target}
    inside.discard(name)
    return {m for m in inside if m in known}, outside


def circles(graph):
    """Each strongly connected set of more than one module (Tarjan), as sorted lists."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(argv):
    if len(argv) != 2:
        print("usage: import_graph.py <package dir>", file=sys.stderr)
        return 2
    known = modules(pathlib.Path(argv[1]).resolve())
    graph, outside = {}, {}
    for name, path in known.items():
        # A package's __init__ re-exports its modules; the edge into it from its own modules is
        # Python's parent import, not a dependency of the code.
        graph[name], outside[name] = imported(name, path, known)
    for name in graph:
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    problems = [f"import circle: {' -> '.join(c)}" for c in circles(graph)]
    problems += [f"{name} imports {', '.join(sorted(outside[name] & set(FRAMEWORKS)))}: gj.common and gj's "
                 "numpy layer must not import a framework" for name in sorted(known)
                 if not name.startswith(("gj.torch", "gj.tensorflow", "gj.horovod"))
                 and outside[name] & set(FRAMEWORKS)]
    for p in problems:
        print(p)
    print(f"{len(known)} modules, {sum(len(e) for e in graph.values())} imports between them, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
