#!/usr/bin/env python3
"""Process-wide statics of a crate: `static` items (at any depth, in functions
too) and each variable a `thread_local!` declares, outside `#[cfg(test)]`
modules and test files. Prints each with its place and the total; with
`--max N`, exits 1 when there are more than N.

Usage: .ci/statics.py crates/NAME/src [--max N]
"""
import os
import re
import sys


def strip(text):
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    test = re.search(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{', text)
    return text[:test.start()] if test else text


def statics(src):
    found = []
    for d, _, names in os.walk(src):
        for f in sorted(names):
            if not f.endswith('.rs') or f in ('tests.rs',) or f.endswith('_tests.rs'):
                continue
            path = os.path.join(d, f)
            text = strip(open(path).read())
            for m in re.finditer(r'\bstatic\s+(?:mut\s+)?([A-Z_][A-Z0-9_]*)\s*:', text):
                line = text.count('\n', 0, m.start()) + 1
                found.append((path, line, m.group(1)))
    return sorted(found)


def main():
    args = sys.argv[1:]
    limit = None
    if '--max' in args:
        i = args.index('--max')
        limit = int(args[i + 1])
        del args[i:i + 2]
    total = 0
    for src in args:
        found = statics(src)
        for path, line, name in found:
            print(f'{path}:{line}: {name}')
        print(f'{src}: {len(found)} statics')
        total += len(found)
    sys.exit(1 if limit is not None and total > limit else 0)


main()
