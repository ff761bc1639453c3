#!/usr/bin/env python3
"""Checks that docs/architecture.md's table of the engine's layers says what
the build enforces (engine/CMakeLists.txt, passed as LAYER:USES arguments,
USES comma-separated): the same layers, each using the same layers.

    check_layer_table.py docs/architecture.md util: filter:util format:util,filter ...
"""
import re
import sys


def doc_table(path):
    layers = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\|\s*`engine/([a-z_]+)/`\s*\|[^|]*\|\s*([^|]*?)\s*\|\s*$", line)
        if not m:
            continue
        uses = m.group(2)
        layers[m.group(1)] = set() if uses in ("—", "-", "") else {u.strip() for u in uses.split(",")}
    return layers


def main(argv):
    doc = doc_table(argv[1])
    build = {}
    for arg in argv[2:]:
        name, _, uses = arg.partition(":")
        build[name] = {u for u in uses.split(",") if u}
    errors = []
    for name in sorted(set(doc) | set(build)):
        if name not in doc:
            errors.append(f"layer {name} is built but not in the table of {argv[1]}")
        elif name not in build:
            errors.append(f"layer {name} is in the table of {argv[1]} but not built (engine/CMakeLists.txt)")
        elif doc[name] != build[name]:
            errors.append(f"layer {name}: the table says it uses {sorted(doc[name]) or 'nothing'}, "
                          f"engine/CMakeLists.txt {sorted(build[name]) or 'nothing'}")
    for e in errors:
        print(e)
    if not errors:
        print(f"{len(build)} layers: the table and the build agree")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
