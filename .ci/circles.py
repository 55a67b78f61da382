#!/usr/bin/env python3
"""Import circles of Rust crates: modules (files) tied into strongly connected
components by their `crate::` and `super::` paths, a crate root's `pub use`
followed to where the item lives. A trailing `#[cfg(test)] mod` and `src/bin` are
left out. Prints each crate's circles; exits 1 when there is one.

Usage: .ci/circles.py crates/NAME/src...
"""
import os
import re
import sys

PATH_MOD = r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)'


def modules(src):
    """Module path (`a::b`, root `''`) -> file."""
    files = {}
    for d, _, names in os.walk(src):
        if os.path.relpath(d, src).split(os.sep)[0] == 'bin':
            continue
        for f in names:
            if f.endswith('.rs'):
                p = os.path.join(d, f)
                rel = os.path.relpath(p, src)[:-3].split(os.sep)
                if rel[-1] == 'mod':
                    rel = rel[:-1]
                if rel in (['lib'], ['main']):
                    rel = []
                files['::'.join(rel)] = p
    for m, p in list(files.items()):
        for path, alias in re.findall(PATH_MOD, open(p).read()):
            target = os.path.normpath(os.path.join(os.path.dirname(p), path))
            for k, v in list(files.items()):
                if os.path.normpath(v) == target:
                    del files[k]
                    files[(m + '::' if m else '') + alias] = v
    return files


def code(path):
    text = re.sub(r'//[^\n]*', '', open(path).read())
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    test = re.search(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{', text)
    return text[:test.start()] if test else text


def expand(prefix, body):
    """The paths of a `{a, b::{c, d}}` group."""
    parts, depth, cur = [], 0, ''
    for ch in body:
        depth += {'{': 1, '}': -1}.get(ch, 0)
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    parts.append(cur)
    paths = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        group = re.match(r'([\w:]*?)::?\{(.*)\}$', part, re.S)
        if group:
            paths += expand(prefix + [x for x in group.group(1).split('::') if x], group.group(2))
        else:
            paths.append(prefix + [x for x in re.split(r'\s+as\s+', part)[0].split('::') if x])
    return paths


def references(files, mod, text):
    out = []
    for m in re.finditer(r'\b(crate|super)((?:::\w+)*)(::\{)?', text):
        base = []
        if m.group(1) == 'super':
            base = mod.split('::')[:-1] if mod else []
        path = base + [x for x in m.group(2).split('::') if x]
        if m.group(3):
            depth, i = 1, m.end()
            while depth:
                depth += {'{': 1, '}': -1}.get(text[i], 0)
                i += 1
            out += [path + p for p in expand([], text[m.end():i - 1])]
        else:
            out.append(path)
    return out


def circles(src):
    files = modules(src)
    reexports = {}
    for body in re.findall(r'pub\s+use\s+([^;]+);', code(files[''])):
        body = body.strip()
        body = body[len('crate::'):] if body.startswith('crate::') else body
        group = re.match(r'([\w:]+)::\{(.*)\}$', body, re.S)
        for p in expand(group.group(1).split('::'), group.group(2)) if group else [body.split('::')]:
            reexports[p[-1]] = p

    def resolve(path):
        if path and path[0] in reexports and path[0] not in files:
            path = reexports[path[0]] + path[1:]
        for n in range(len(path), 0, -1):
            if '::'.join(path[:n]) in files:
                return '::'.join(path[:n])
        return None

    graph = {m: set() for m in files if m}
    for m in graph:
        for r in references(files, m, code(files[m])):
            t = resolve(r)
            if t and t != m:
                graph[m].add(t)
    # Tarjan's strongly connected components.
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
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                found.append(sorted(c))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return len(graph), found


def main():
    any_found = False
    for src in sys.argv[1:]:
        n, found = circles(src)
        print(f"{src}: {n} modules, {len(found)} circles, {sum(map(len, found))} modules in circles")
        for c in found:
            print('   ', ' '.join(c))
        any_found = any_found or bool(found)
    sys.exit(1 if any_found else 0)


main()
