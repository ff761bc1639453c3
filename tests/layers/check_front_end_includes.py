#!/usr/bin/python3
"""The front ends (fusefs/, tools/, python/src/) use the public API
(include/slabfs/) and, of the engine, only the shared low layer that
docs/architecture.md names: checked here, so that the rule is not only
written down.

    check_front_end_includes.py SOURCE_DIR

Fails, naming file and line, for an `#include "engine/..."` in a front end
that is not one of ALLOWED, and for an ALLOWED header that
docs/architecture.md does not name.
"""
import pathlib
import re
import sys

ALLOWED = {
    "engine/io/os_error.h",
    "engine/filter/shuffle.h",
    "engine/filter/deflate_pool.h",
    "engine/filter/decode_scratch.h",
    "engine/util/expensive_checks.h",
}
FRONT_ENDS = ("fusefs", "tools", "python/src")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(engine/[^"]+)"')


def main():
    root = pathlib.Path(sys.argv[1])
    problems = []
    checked = 0
    for front in FRONT_ENDS:
        for path in sorted((root / front).rglob("*")):
            if path.suffix not in (".cc", ".h", ".cpp"):
                continue
            checked += 1
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if m and m.group(1) not in ALLOWED:
                    problems.append(f"{path.relative_to(root)}:{number}: includes {m.group(1)}, an engine "
                                    f"header the front ends may not use (allowed: {', '.join(sorted(ALLOWED))})")
    doc = (root / "docs" / "architecture.md").read_text()
    for header in sorted(ALLOWED):
        if f"`{header}`" not in doc:
            problems.append(f"docs/architecture.md does not name `{header}`, which the front ends may include")
    if checked == 0:
        problems.append("no front-end source files found: wrong SOURCE_DIR?")
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"{checked} front-end files include only the public API and {len(ALLOWED)} shared engine headers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
