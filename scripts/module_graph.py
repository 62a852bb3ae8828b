#!/usr/bin/env python3
"""The module graph of each crate: which file uses items of which file.

A file uses another when it names an item defined there, through a `use`
or a path in the code (`crate::…`, `super::…`, a child module's name);
re-exports are followed to the file that defines the item, and `#[cfg(test)]`
modules are left out (tests may reach anywhere). Prints every import circle,
and the files over the size limit whose header gives no reason, and exits 1
when there is one.

    scripts/module_graph.py [--edges] [crate dir ...]   (default: crates/*)
    scripts/module_graph.py --self-test                 the check finds what it must
"""

import os
import re
import sys
from collections import defaultdict

MAX_LINES = 800
# A long file says why in its first lines, with this phrase.
LONG_FILE_REASON = "long because"

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|const\s+|unsafe\s+)*"
    r"(?:struct|enum|trait|fn|type|const|static|mod|union|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
# Comments, raw strings, strings and char literals of quotes, first to start wins.
TOKENS = re.compile(
    r"//[^\n]*|/\*.*?\*/|\bb?r(#*)\"(?:.|\n)*?\"\1|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])'(?!\w)",
    re.S,
)
INLINE = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def strip_code(text):
    """The text without comments, strings and `#[cfg(test)]` modules."""
    # One pass, so that a `//` inside a string ("ui://") is not a comment
    # and a quote inside a comment does not open a string.
    text = TOKENS.sub(lambda m: '""' if m.group(0).endswith(("\"", "#")) else "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    text = "".join(out)
    # `#[cfg(test)] mod tests;` declares a test file: drop the declaration.
    return re.sub(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*;", "", text)


def use_paths(tree, prefix=""):
    """The paths a use tree names, `a::{b, c::{d as e}}` → a::b, a::c::d."""
    tree = tree.strip()
    brace = tree.find("{")
    if brace < 0:
        path = tree.split(" as ")[0].strip()
        return [prefix + path] if path else []
    head = tree[:brace]
    body = tree[brace + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    paths = []
    for p in parts:
        p = p.strip()
        if p == "self":
            paths.append((prefix + head).rstrip(":"))
        elif p:
            paths.extend(use_paths(p, prefix + head))
    return paths


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path (tuple) -> file
        for dirpath, _, names in os.walk(src):
            for name in names:
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, name)
                parts = os.path.relpath(path, src)[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib", "main"):
                    parts = parts[:-1]
                # Binaries are crates of their own; `tests.rs` files are
                # `#[cfg(test)]` modules.
                if parts and (parts[0] == "bin" or parts[-1] == "tests"):
                    continue
                self.files[tuple(parts)] = path
        self.code = {m: strip_code(open(p).read()) for m, p in self.files.items()}
        self.items = {m: set(ITEM.findall(c)) for m, c in self.code.items()}
        self.reexports = defaultdict(dict)  # module -> name -> absolute path
        for m, c in self.code.items():
            for vis, tree in USE.findall(c):
                if not vis:
                    continue
                for p in use_paths(tree):
                    absolute = self.absolute(m, p)
                    if absolute:
                        alias = re.search(r"\bas\s+(\w+)\s*$", p)
                        self.reexports[m][absolute[-1]] = absolute
            # `pub use x::{A as B}`: the alias names the same item.
            for vis, tree in USE.findall(c):
                if vis:
                    for a, b in re.findall(r"(\w+)\s+as\s+(\w+)", tree):
                        for name, target in list(self.reexports[m].items()):
                            if name == a:
                                self.reexports[m][b] = target

    def absolute(self, module, path):
        """`path` as written in `module`, made absolute (a tuple), or None
        for a path outside the crate."""
        segs = [s for s in path.replace(" ", "").split("::") if s]
        if not segs:
            return None
        if segs[0] == "crate":
            return tuple(segs[1:])
        base = list(module)
        if segs[0] == "self":
            return tuple(base + segs[1:])
        if segs[0] == "super":
            while segs and segs[0] == "super":
                base = base[:-1]
                segs = segs[1:]
            return tuple(base + segs)
        if tuple(base + [segs[0]]) in self.files:  # a child module
            return tuple(base + segs)
        return None

    def defining_file(self, path, seen=None):
        """The module whose file defines the item at absolute `path`."""
        seen = seen or set()
        if path in seen:
            return None
        seen.add(path)
        # The longest prefix that is a module file.
        for cut in range(len(path), -1, -1):
            module = path[:cut]
            if module not in self.files:
                continue
            rest = path[cut:]
            if not rest:
                return module
            name = rest[0]
            if name in self.reexports[module]:
                target = self.reexports[module][name] + rest[1:]
                return self.defining_file(target, seen)
            return module
        return None

    def edges(self):
        graph = defaultdict(set)
        for m, c in self.code.items():
            paths = []
            for vis, tree in USE.findall(c):
                if not vis:  # re-exports are followed, not counted
                    paths.extend(use_paths(tree))
            no_use = USE.sub("", c)
            paths.extend(INLINE.findall(no_use))
            # Paths through a child module named in the code (`tasks::X`).
            for child in {k[len(m)] for k in self.files if len(k) == len(m) + 1 and k[: len(m)] == m}:
                paths.extend(re.findall(r"\b(" + child + r"(?:::\w+)+)", no_use))
            for p in paths:
                absolute = self.absolute(m, p)
                if absolute is None:
                    continue
                target = self.defining_file(absolute)
                # The crate root only declares and re-exports: a path that
                # ends there names something from outside the crate.
                if target and target != m:
                    graph[m].add(target)
        return graph


def circles(graph, nodes):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def name(module):
    return "::".join(module) or "lib"


def self_test():
    """Checks the check on small crates of its own: a circle through a
    re-export and `super::`, one behind a string holding `//`, a long
    file, and the same crate made clean."""
    import tempfile

    def crate(files):
        root = tempfile.mkdtemp()
        for path, text in files.items():
            full = os.path.join(root, "src", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        return Crate(os.path.join(root, "src"))

    circular = crate({
        "lib.rs": "mod a;\nmod b;\npub use b::B;\n",
        "a/mod.rs": "mod child;\npub struct A;\nfn f(_: crate::B) {}\n",
        "a/child.rs": "use super::A;\n",
        "b.rs": "use crate::a::A;\npub struct B(A);\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
    })
    found = circles(circular.edges(), circular.files)
    assert found == [[("a",), ("b",)]], found
    # A `//` inside a string is not a comment: the path after it counts.
    through_string = crate({
        "lib.rs": "mod a;\nmod b;\n",
        "a.rs": 'pub struct A;\nconst S: &str = "ui://";\nfn f(_: crate::b::B) {}\nconst T: char = \'"\';\n',
        "b.rs": "use crate::a::A;\npub struct B(A);\n",
    })
    found = circles(through_string.edges(), through_string.files)
    assert found == [[("a",), ("b",)]], found
    clean = crate({
        "lib.rs": "mod a;\nmod b;\n",
        "a.rs": "pub struct A;\n",
        "b.rs": "use crate::a::A;\npub struct B(A);\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
    })
    assert circles(clean.edges(), clean.files) == [], clean.edges()
    print("module_graph self-test: ok")


def main(argv):
    if "--self-test" in argv:
        self_test()
        return 0
    show_edges = "--edges" in argv
    dirs = [a for a in argv if not a.startswith("--")]
    if not dirs:
        dirs = sorted(os.path.join("crates", d) for d in os.listdir("crates"))
    failed = False
    for crate_dir in dirs:
        crate = Crate(os.path.join(crate_dir, "src"))
        graph = crate.edges()
        if show_edges:
            for m in sorted(graph):
                print(f"{crate_dir}: {name(m)} -> {', '.join(sorted(map(name, graph[m])))}")
        for comp in circles(graph, crate.files):
            failed = True
            print(f"{crate_dir}: import circle: {' ⇄ '.join(map(name, comp))}")
        for m, path in sorted(crate.files.items()):
            text = open(path).read()
            lines = text.count("\n")
            test_at = text.find("#[cfg(test)]\nmod tests {")
            if test_at >= 0:
                lines = text[:test_at].count("\n")
            if lines > MAX_LINES and LONG_FILE_REASON not in "\n".join(text.splitlines()[:15]):
                failed = True
                print(f"{path}: {lines} lines without tests, and no reason in its header")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
