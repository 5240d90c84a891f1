#!/usr/bin/python3
"""hyperoffloadd.conf(5) stays in step with the daemon's settings table.

The SETTINGS part of docs/hyperoffloadd.conf.5 (between the lines
``.\\" BEGIN GENERATED SETTINGS`` and ``.\\" END GENERATED SETTINGS``) is
generated from ``hyperoffloadd --help``, which prints every setting's flag,
value type, meaning, section, key, default, range and whether SIGHUP
applies it (one row each of daemon/config.c's table).  The rest of the page
is prose written by hand.

    conf_man.py DAEMON MANPAGE           check: exit 1 and show the diff when
                                         the page differs from the table
    conf_man.py --write DAEMON MANPAGE   regenerate the SETTINGS part

Run ``--write`` after adding or changing a setting (ctest test
packaging_conf_man fails until then).
"""

import difflib
import re
import subprocess
import sys

BEGIN = '.\\" BEGIN GENERATED SETTINGS'
END = '.\\" END GENERATED SETTINGS'

# "  --socket TEXT            * Unix socket path ..."
_FLAG = re.compile(r"^  (--[a-z0-9-]+) (\S+)\s+(\*?)\s*(.*)$")
# "                           [server] socket, default '...', 0000..0777"
_WHERE = re.compile(r"^\s+\[([a-z]+)\] ([a-z_]+), default '(.*?)'(?:, (.+))?$")


def settings(daemon):
    """[(section, key, flag, type, meaning, default, range, reload)] in the
    order of --help."""
    out = subprocess.run([daemon, "--help"], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True
                         ).stdout.splitlines()
    rows, pending = [], None
    for line in out:
        m = _FLAG.match(line)
        if m:
            pending = m.groups()
            continue
        w = _WHERE.match(line)
        if w and pending:
            flag, typ, star, meaning = pending
            section, key, default, rng = w.groups()
            rows.append((section, key, flag, typ, meaning, default,
                         rng or "", star == "*"))
            pending = None
    if not rows:
        raise SystemExit("no settings found in %s --help" % daemon)
    return rows


def _esc(s):
    """Text for roff: backslashes and leading dots/quotes, hyphens."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s[:1] in (".", "'"):
        s = "\\&" + s
    return s


def generate(rows):
    lines = [BEGIN,
             '.\\" generated from "hyperoffloadd --help" by'
             ' tests/packaging/conf_man.py --write; do not edit by hand']
    section = None
    for sec, key, flag, typ, meaning, default, rng, reload in rows:
        if sec != section:
            section = sec
            lines += [".SS [%s]" % sec]
        lines += [".TP",
                  "\\fB%s\\fR = \\fI%s\\fR" % (_esc(key), _esc(typ))]
        meaning = meaning[0].upper() + meaning[1:] if meaning else meaning
        if not meaning.endswith("."):
            meaning += "."
        lines.append(_esc(meaning))
        facts = ["Default: \\fB%s\\fR" % (_esc(default) if default
                                          else "(empty)")]
        if rng:
            facts.append("range %s" % _esc(rng))
        facts.append("flag \\fB%s\\fR" % _esc(flag))
        facts.append("applied on SIGHUP" if reload else "needs a restart")
        lines.append("; ".join(facts) + ".")
    lines.append(END)
    return lines


def splice(page, generated):
    lines = page.splitlines()
    try:
        a, b = lines.index(BEGIN), lines.index(END)
    except ValueError:
        raise SystemExit("markers %r / %r not found" % (BEGIN, END))
    return lines[:a] + generated + lines[b + 1:]


def main(argv):
    write = argv[:1] == ["--write"]
    if write:
        argv = argv[1:]
    if len(argv) != 2:
        raise SystemExit(__doc__)
    daemon, manpage = argv
    with open(manpage, encoding="utf-8") as f:
        page = f.read()
    new = "\n".join(splice(page, generate(settings(daemon)))) + "\n"
    if write:
        if new != page:
            with open(manpage, "w", encoding="utf-8") as f:
                f.write(new)
            print("updated", manpage)
        return 0
    if new != page:
        sys.stdout.writelines(difflib.unified_diff(
            page.splitlines(True), new.splitlines(True), manpage,
            "generated from %s --help" % daemon))
        print("\n%s is out of step with the daemon's settings: run\n"
              "  tests/packaging/conf_man.py --write %s %s"
              % (manpage, daemon, manpage))
        return 1
    print("%s: %d settings, in step" % (manpage, len(settings(daemon))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
