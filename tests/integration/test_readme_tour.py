"""The README's tour, and the docs' worked examples, run as written.

Marker convention: a fenced ```sh (or ```console, or ```python) block that
is part of a document's tour has the HTML comment `<!-- tour -->` on the
line before its opening fence; a reader of the rendered page does not see
it. Optional
hidden setup follows a colon, `<!-- tour: slab create data.slab -->`: that
shell line runs before the block (for a docs page whose example starts from
a container the page does not make). Unmarked blocks (an fstab line, a
`tail -f` that never ends, output shown for explanation) are not run.

Inside a marked block:
- A block with lines starting with `$ ` is a transcript: each `$ ` line is
  a command, and the lines up to the next `$ ` line are what it prints.
- Any other block is a list of commands, one a line (`\\` continues one),
  that print nothing the test compares. A ```python block is one such
  command: the block run by /usr/bin/python3.
- In a transcript, a command that exits 0 prints exactly the lines shown
  on stdout (stderr is not compared: dd's record counts); one that exits
  non-zero must show its error, and prints exactly the lines shown on
  stdout and stderr together (`ln: ... Operation not permitted`). A command
  of a list must exit 0.
- Lines are compared with runs of blanks as one blank and blank lines left
  out, `ls -l` dates and ISO times as placeholders, and bash's "bash: line
  N:" prefix as "bash:"; in a shown line, `...` matches anything and a
  trailing comment (two or more blanks, then `#`) is dropped; a shown line
  that is just `...` stands for any number of lines.

Every marked block of one document runs in order in one bash session, in a
fresh temporary directory laid out like a clone: `build` links the build
(SLABFS_BIN's parent) and `mount_scripts` the clone's scripts; the README's
first tour block runs quickstart.sh itself (with SLABFS_BIN set, so it
builds nothing). A docs page starts with mount_scripts/make_examples.sh's
inputs and `slab`, `slabfs` on PATH. At the end, whatever happened, every
mount under the directory is unmounted and its daemon waited for.
"""
import os
import pathlib
import re
import shlex
import subprocess
import time

import pytest

from conftest import BIN, ROOT, bin_path
from mounting import is_mounted

TOUR_TIMEOUT = 600  # seconds for one document's whole tour

MARKER = re.compile(r"^<!--\s*tour(?::\s*(?P<setup>.*?))?\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z]*)\s*$")


class Command:
    def __init__(self, doc, line_no, text, shown, transcript):
        self.doc, self.line_no, self.text, self.shown = doc, line_no, text, shown
        self.transcript = transcript

    def where(self):
        return f"{self.doc}:{self.line_no}: {self.text}"


def tour_blocks(path):
    """[(setup or None, first line number, [lines])] of the marked blocks."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m and i + 1 < len(lines) and FENCE.match(lines[i + 1]):
            lang = FENCE.match(lines[i + 1]).group("lang")
            assert lang in ("sh", "console", "bash", "", "python"), f"{path.name}:{i + 2}: a tour block in {lang}"
            j = i + 2
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            assert j < len(lines), f"{path.name}:{i + 2}: the tour block does not end"
            body = lines[i + 2:j]
            if lang == "python":
                # One command: the block as a script for Debian's interpreter.
                body = ["/usr/bin/python3 - <<'TOUR_PY'", *body, "TOUR_PY"]
                body = ["\n".join(body)]
            blocks.append((m.group("setup"), i + 3, body))
            i = j
        i += 1
    return blocks


def _strip_comment(line):
    return re.sub(r"\s{2,}#.*$", "", line)


def commands_of(doc, blocks):
    """The commands of a document's tour, in order, with what each shows."""
    out = []
    for setup, first, lines in blocks:
        if setup:
            out.append(Command(doc, first - 2, setup, [], False))
        transcript = any(l.startswith("$ ") for l in lines)
        k = 0
        while k < len(lines):
            line, no = lines[k], first + k
            k += 1
            if transcript:
                if not line.startswith("$ "):
                    assert not out or out[-1].line_no < first, f"{doc}:{no}: output before any command"
                    continue
                text = line[2:]
            else:
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                text = line
            while text.endswith("\\") and k < len(lines):
                text = text[:-1] + "\n" + lines[k]
                k += 1
            shown = []
            if transcript:
                while k < len(lines) and not lines[k].startswith("$ "):
                    if lines[k].strip():
                        shown.append(_strip_comment(lines[k]))
                    k += 1
            out.append(Command(doc, no, text, shown, transcript))
    return out


def _normal(line):
    line = re.sub(r"^(bash|\S+\.sh|/bin/bash|\S*/tour\.bash): line \d+: ", "bash: ", line)
    line = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?", "<time>", line)
    line = re.sub(r"\b[A-Z][a-z]{2} +\d{1,2} +(\d\d:\d\d|\d{4})\b", "<date>", line)
    return " ".join(line.split())


def _pattern(shown):
    parts = [re.escape(p) for p in _normal(shown).split("...")]
    return re.compile("^" + ".*".join(parts) + "$")


def _matches(shown, actual):
    """Whether the shown lines are the actual ones; a shown line `...`
    stands for any number of lines."""
    if not shown:
        return not actual
    if _normal(shown[0]) == "...":
        return any(_matches(shown[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and bool(_pattern(shown[0]).match(actual[0])) and _matches(shown[1:], actual[1:])


def _lines(text):
    return [_normal(l) for l in text.splitlines() if l.strip()]


def check_output(cmd, rc, stdout, stderr):
    """Raises AssertionError when cmd's run does not match the document:
    a command that exits 0 prints the shown lines on stdout; one that
    fails prints them on stdout and stderr, and must show some."""
    if cmd.transcript:
        printed = _lines(stdout) if rc == 0 else _lines(stdout) + _lines(stderr)
        if not _matches(cmd.shown, printed) or (rc != 0 and not cmd.shown):
            shown = "\n".join(f"  {l}" for l in cmd.shown) or "  (nothing)"
            raise AssertionError(
                f"{cmd.where()}\nthe document shows:\n{shown}\nbut it exited {rc} and printed:\n"
                f"stdout:\n{stdout}\nstderr:\n{stderr}")
    elif rc != 0:
        raise AssertionError(f"{cmd.where()}\nexited {rc}\nstdout:\n{stdout}\nstderr:\n{stderr}")


def write_script(commands, outdir):
    """One bash script running every command in turn, each one's stdout,
    stderr and exit status in outdir/N.{out,err,rc}. It stops after the
    first command that fails without a shown error, as a reader would."""
    lines = ["set +e", "set -o pipefail"]
    for n, c in enumerate(commands):
        o = shlex.quote(str(outdir / str(n)))
        may_fail = c.transcript and bool(c.shown)
        lines.append(f"{{\n{c.text}\n}} >{o}.out 2>{o}.err </dev/null; rc=$?; echo $rc >{o}.rc")
        if not may_fail:
            lines.append("[ $rc = 0 ] || exit 0")
    return "\n".join(lines) + "\n"


def unmount_all_under(d):
    d = os.path.realpath(d)
    with open("/proc/self/mounts") as f:
        points = [l.split()[1] for l in f if l.split()[2].startswith("fuse")]
    for p in points:
        p = p.encode().decode("unicode_escape")
        if p == d or p.startswith(d + "/"):
            subprocess.run(["fusermount3", "-u", p], capture_output=True)
            for _ in range(100):
                if not is_mounted(p):
                    break
                time.sleep(0.1)
            else:
                subprocess.run(["umount", "-l", p], capture_output=True)


def daemons_of(d):
    """Pids of slabfs daemons whose command line names a path under d."""
    pids = []
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"slabfs") and any(str(d).encode() in a for a in argv[1:]):
            pids.append(int(p.name))
    return pids


@pytest.fixture
def tour_dir(tmp_path):
    """A temporary directory laid out like a clone, with build/ and
    mount_scripts/; unmounts everything under it at the end, and waits for
    the daemons to exit (a commit at unmount is part of the tour)."""
    bin_path("slab"), bin_path("slabfs")
    (tmp_path / "build").symlink_to(pathlib.Path(BIN).resolve().parent)
    (tmp_path / "mount_scripts").symlink_to(ROOT / "mount_scripts")
    (tmp_path / ".tour").mkdir()
    try:
        yield tmp_path
    finally:
        unmount_all_under(tmp_path)
        for _ in range(300):
            if not daemons_of(tmp_path):
                break
            time.sleep(0.1)
        left = daemons_of(tmp_path)
        for pid in left:
            os.kill(pid, 9)
        assert not left, f"slabfs daemons still running after unmount: {left}"


def run_tour(doc, commands, cwd, scratch, env):
    """Runs the commands in cwd; their outputs and the script go to scratch."""
    outdir = scratch / "outputs"
    outdir.mkdir()
    script = scratch / "tour.bash"
    script.write_text(write_script(commands, outdir))
    subprocess.run(["bash", str(script)], cwd=cwd, env=env, timeout=TOUR_TIMEOUT,
                   stdin=subprocess.DEVNULL, capture_output=True)
    ran = 0
    for n, c in enumerate(commands):
        rc_file = outdir / f"{n}.rc"
        assert rc_file.exists(), f"{c.where()}\nnever ran (the tour stopped before it)"
        ran += 1
        check_output(c, int(rc_file.read_text()), (outdir / f"{n}.out").read_text(errors="replace"),
                     (outdir / f"{n}.err").read_text(errors="replace"))
    return ran


def tour_env(tmp):
    env = dict(os.environ)
    env["SLABFS_BIN"] = str(pathlib.Path(BIN).resolve())
    env.pop("PYTHONPATH", None)  # the README's tour sets it
    env["LC_ALL"] = "C"
    env["HOME"] = str(tmp)
    return env


def test_the_readme_tour_runs_as_written(tour_dir):
    commands = commands_of("README.md", tour_blocks(ROOT / "README.md"))
    assert len(commands) > 40, "the README's tour blocks are not marked (<!-- tour -->)"
    assert "quickstart.sh" in commands[1].text, commands[1].where()
    env = tour_env(tour_dir)
    # The README's tour starts in the clone's root, as quickstart does.
    assert run_tour("README.md", commands, tour_dir, tour_dir / ".tour", env) == len(commands)


DOCS = ["docs/mount.md", "docs/interop.md", "docs/cli.md"]


@pytest.mark.parametrize("doc", [d for d in DOCS if tour_blocks(ROOT / d)])
def test_a_docs_tour_runs_as_written(tour_dir, doc):
    commands = commands_of(doc, tour_blocks(ROOT / doc))
    env = tour_env(tour_dir)
    env["PATH"] = f"{pathlib.Path(BIN).resolve()}:{env['PATH']}"
    work = tour_dir / "work"
    subprocess.run(["bash", str(ROOT / "mount_scripts" / "make_examples.sh"), str(work)],
                   env=env, check=True, capture_output=True, timeout=300)
    assert run_tour(doc, commands, work, tour_dir / ".tour", env) == len(commands)
