#!/usr/bin/env python3
"""How much of rag.py a workshop reads: the lines of what the README's workshop path names, and of those
plus the core functions they call that it does not name (what a learner really has to open).

The path is the list under "For a 90-minute workshop" in README.md's tour. In it, `name` is a function,
class or setting of rag.py (`Index.search`: a method), and **Name** a whole section of the core (the
banner "# Name: ..."). A call is counted when a named function uses the name of a core function or class
(one level: the functions that those call are not added again). The last line is the two totals:

    named 580, with what they call 870

With --check, the README's own figures ("about N lines named, M with what they call") must be within 10%
of the counted ones: CI runs it so.
"""
import argparse
import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLAIM = re.compile(r"about ([\d,]+) lines named, ([\d,]+) with what they call")


def workshop_path(readme):
    """Return the README's workshop list: its text, from its heading line to the blank line after it."""
    start = readme.index("For a 90-minute workshop")
    end = readme.find("\n\n", readme.index("\n- ", start))
    return readme[start:end if end > 0 else len(readme)]


def core_of(source):
    """Return (the core's lines, its sections {name: (first, last) line}): all before the first appendix."""
    lines = source.split("\n")
    end = next(n for n, line in enumerate(lines) if line.startswith("# Appendix"))
    banners = [n for n in range(1, end) if lines[n - 1].startswith("# ----") and re.match(r"# [A-Z][\w ]*:", lines[n])]
    sections = {}
    for at, n in enumerate(banners):
        name = re.match(r"# ([A-Z][\w ]*):", lines[n]).group(1)
        stop = banners[at + 1] - 1 if at + 1 < len(banners) else end - 1
        sections[name] = (n, stop - 1)  # 1-based lines: the banner's text line to the line before the next banner
    return end - 1, sections


def definitions(tree, core_end):
    """Return {name: (first line, last line, node)} of the core's top-level functions, classes, methods and
    settings (Name = ...), each from its first decorator or line to its last."""
    found = {}
    for node in tree.body:
        if node.lineno > core_end:
            break
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = (first, node.end_lineno, node)
            for item in node.body if isinstance(node, ast.ClassDef) else ():
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = (item.lineno, item.end_lineno, item)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = (first, node.end_lineno, node)
    return found


def called(node, defined):
    """Return the names of core functions and classes a function's body uses (self.x: the method x)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in defined:
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id in ("self", "index"):
            names.update(name for name in defined if name.endswith("." + sub.attr))
    return {name for name in names if isinstance(defined[name][2], (ast.FunctionDef, ast.ClassDef))}


def measure(readme, source):
    """Return (lines named, lines with what they call, [(name, lines)] of what was added, [unknown names])."""
    path = workshop_path(readme)
    core_end, sections = core_of(source)
    defined = definitions(ast.parse(source), core_end)
    wanted_sections = re.findall(r"\*\*([A-Z][\w ]*)\*\*", path)
    wanted = re.findall(r"`([A-Za-z_][\w.]*)(?:\(\))?`", path)
    unknown = [n for n in wanted if n not in defined] + [n for n in wanted_sections if n not in sections]
    lines = set()
    for name in wanted_sections:
        first, last = sections.get(name, (0, -1))
        lines.update(range(first, last + 1))
    for name in wanted:
        if name in defined:
            first, last, _ = defined[name]
            lines.update(range(first, last + 1))
    named = len(lines)
    readers = [defined[n][2] for n in wanted if n in defined]
    readers += [d[2] for d in defined.values() if any(sections[s][0] <= d[0] <= sections[s][1] for s in wanted_sections if s in sections)]
    added = []
    for name in sorted(set().union(*(called(node, defined) for node in readers)) if readers else ()):
        first, last, _ = defined[name]
        new = set(range(first, last + 1)) - lines
        if new:
            added.append((name, len(new)))
            lines.update(new)
    return named, len(lines), added, unknown


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the README's figures are off by over 10%%")
    parser.add_argument("--verbose", action="store_true", help="list what the named functions call")
    args = parser.parse_args()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(ROOT, "rag.py"), encoding="utf-8") as f:
        source = f.read()
    named, total, added, unknown = measure(readme, source)
    if args.verbose:
        for name, count in added:
            print(f"  calls {name}: {count} lines")
    if unknown:
        print("not in the core of rag.py: " + ", ".join(unknown))
    print(f"named {named}, with what they call {total}")
    if args.check:
        claim = CLAIM.search(workshop_path(readme))
        if not claim:
            sys.exit("README.md's workshop path says no figures ('about N lines named, M with what they call')")
        said = [int(claim.group(n).replace(",", "")) for n in (1, 2)]
        off = [abs(s - m) / m for s, m in zip(said, (named, total))]
        if unknown or max(off) > 0.10:
            sys.exit(f"README.md says {said[0]} named and {said[1]} with what they call; counted {named} and {total}")


if __name__ == "__main__":
    main()
