#!/usr/bin/env python3
"""Where the WebAssembly module's code bytes go, by function (in the manner of `twiggy top`).

Reads a module that still has its name section, wasm-bindgen's output before `wasm-opt` (which
drops the names unless run with `-g`), and prints code-section body sizes (before `wasm-opt`,
which shrinks and inlines, so compare builds with each other rather than with the final size):

  python3 bench/wasm-sizes.py MODULE.wasm [top N | crates | generic N | dump]

  top N      the N largest functions (default 60)
  crates     sizes summed by the name's leading path segment (crate, or C function)
  generic    sizes summed over instances of one generic function (type arguments erased)
  dump       every function, "size name", for diffing two builds

A module with names: `bash server/wasm/build.sh --no-opt`, then server/wasm/pkg/web/
tpulint_wasm_bg.wasm (pkg/web-lsp/ for the language server's). cargo's own output
(target/wasm32-unknown-unknown/wasm-release/tpulint_wasm.wasm) has names too, still mangled.
Crate hashes (`[0123abcd]`) are stripped. See docs/benchmarks.md, "WebAssembly build".
"""
import collections
import re
import sys


def leb(data, i):
    result = shift = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def name(data, i):
    n, i = leb(data, i)
    return data[i:i + n].decode('utf-8', 'replace'), i + n


def limits(data, i):
    flags, i = leb(data, i)
    _, i = leb(data, i)
    if flags & 1:
        _, i = leb(data, i)
    return i


def parse(path):
    """[(body size, function name)] in code-section order."""
    data = open(path, 'rb').read()
    i = 8
    imported = 0
    bodies = []
    names = {}
    while i < len(data):
        section = data[i]
        size, i = leb(data, i + 1)
        end = i + size
        if section == 2:  # imports: function indices start after the imported functions
            count, j = leb(data, i)
            for _ in range(count):
                _, j = name(data, j)
                _, j = name(data, j)
                kind = data[j]
                j += 1
                if kind == 0:
                    _, j = leb(data, j)
                    imported += 1
                elif kind == 1:
                    j = limits(data, j + 1)
                elif kind == 2:
                    j = limits(data, j)
                elif kind == 3:
                    j += 2
        elif section == 10:
            count, j = leb(data, i)
            for _ in range(count):
                body, k = leb(data, j)
                bodies.append(body + (k - j))
                j = k + body
        elif section == 0:
            custom, j = name(data, i)
            if custom == 'name':
                while j < end:
                    sub = data[j]
                    sub_size, j = leb(data, j + 1)
                    sub_end = j + sub_size
                    if sub == 1:
                        count, k = leb(data, j)
                        for _ in range(count):
                            index, k = leb(data, k)
                            names[index], k = name(data, k)
                    j = sub_end
        i = end
    return [(size, re.sub(r'\[[0-9a-f]+\]', '', names.get(imported + k, f'func[{imported + k}]')))
            for k, size in enumerate(bodies)]


def erase_generics(text):
    out, depth = [], 0
    for ch in text:
        if ch == '<':
            depth += 1
            if depth == 1:
                out.append('<')
        elif ch == '>':
            depth -= 1
            if depth == 0:
                out.append('_>')
        elif depth == 0:
            out.append(ch)
    return ''.join(out)


def generic_key(function):
    # `<T as Trait>::method` is keyed by trait and method, everything else with type arguments erased.
    match = re.match(r'^<(.*) as (.*)>::(.*)$', function)
    if match:
        return f'{erase_generics(match.group(2))}::{erase_generics(match.group(3))} [impl]'
    return erase_generics(function)


def main():
    functions = parse(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else 'top'
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    if mode == 'dump':
        for size, function in functions:
            print(size, function)
        return
    if mode in ('crates', 'generic'):
        sizes, counts = collections.Counter(), collections.Counter()
        for size, function in functions:
            if mode == 'crates':
                match = re.match(r'<?([A-Za-z_][A-Za-z0-9_]*)', function)
                key = match.group(1) if match else function
            else:
                key = generic_key(function)
            sizes[key] += size
            counts[key] += 1
        for key, size in sizes.most_common(limit):
            print(f'{size:9} {counts[key]:5}  {key[:200]}')
    else:
        for size, function in sorted(functions, reverse=True)[:limit]:
            print(f'{size:9}  {function[:200]}')
    print(f'{sum(size for size, _ in functions):9}  total code ({len(functions)} functions)')


if __name__ == '__main__':
    main()
