#!/usr/bin/env python3
"""Non-test functions of src/ longer than a threshold, longest first (the project's measure: none
over 120 lines, at most 8 over 80). A function's length is from its `fn` line to its closing
brace; braces inside strings, chars and comments are skipped; `#[cfg(test)]` modules and
`#[test]` functions are left out.

Usage: bench/long_functions.py [LINES] (default 80)"""
import pathlib
import re
import sys

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 80
ROOT = pathlib.Path(__file__).resolve().parent.parent / "src"
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+|async\s+|unsafe\s+|extern\s+\"C\"\s+)*fn\s+(\w+)")


def code_only(line, state):
    """The line without strings, chars and comments; `state` carries a block comment or a
    string across lines."""
    out, i = [], 0
    while i < len(line):
        c = line[i]
        if state["block"]:
            if line.startswith("*/", i):
                state["block"] = False
                i += 2
            else:
                i += 1
            continue
        if state["string"]:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                state["string"] = False
            i += 1
            continue
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        if c == '"':
            state["string"] = True
            i += 1
            continue
        if c == "'" and re.match(r"'(\\.|[^\\'])'", line[i:]):
            i += len(re.match(r"'(\\.|[^\\'])'", line[i:]).group(0))
            continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    lines = path.read_text().splitlines()
    state = {"block": False, "string": False}
    depth, skip_below, pending_test = 0, None, False
    open_fns = []  # [name, start line, depth at its body, whether its body has begun]
    for n, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if stripped.startswith("#[cfg(test)]") or stripped.startswith("#[test]"):
            pending_test = True
        code = code_only(raw, state)
        m = FN.match(raw) if not state["string"] else None
        if m and skip_below is None and "{" in code or (m and skip_below is None and not code.rstrip().endswith(";")):
            if pending_test:
                skip_below = depth
            else:
                open_fns.append([m.group(4), n, depth, False])
            pending_test = False
        elif stripped.startswith("mod ") and pending_test and skip_below is None:
            skip_below = depth
            pending_test = False
        elif stripped and not stripped.startswith("#"):
            pending_test = pending_test and stripped.startswith("///")
        for c in code:
            if c == "{":
                if open_fns and not open_fns[-1][3] and depth == open_fns[-1][2]:
                    open_fns[-1][3] = True
                depth += 1
            elif c == "}":
                depth -= 1
                if open_fns and depth == open_fns[-1][2]:
                    name, start, _, _ = open_fns.pop()
                    yield name, start, n - start + 1
                if skip_below is not None and depth == skip_below:
                    skip_below = None
        # A declaration without a body (a trait's method over several lines) ends at its `;`.
        if open_fns and not open_fns[-1][3] and code.rstrip().endswith(";"):
            open_fns.pop()


rows = []
for f in sorted(ROOT.rglob("*.rs")):
    for name, start, length in functions(f):
        rows.append((length, f"{f.relative_to(ROOT.parent)}:{start}", name))
rows.sort(reverse=True)
long = [r for r in rows if r[0] > LIMIT]
for length, where, name in long:
    print(f"{length:5}  {where}  {name}")
print(f"{len(long)} non-test functions over {LIMIT} lines; {sum(r[0] > 120 for r in rows)} over 120")
