#!/usr/bin/env bash
# `cmake --install` of the build tree into a DESTDIR with the prefix /usr:
# the files an admin and a developer expect are there, and every installed
# file a man page's SEE ALSO (or FILES) names under
# /usr/share/doc/hyperoffload/ exists.
#   test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
DESTDIR=$dest cmake --install "$build" --prefix /usr >/dev/null
fail=0
for f in usr/sbin/hyperoffloadd usr/bin/hoctl \
         usr/share/man/man1/hoctl.1 usr/share/man/man5/hyperoffloadd.conf.5 \
         usr/share/bash-completion/completions/hoctl \
         usr/share/man/man8/hyperoffloadd.8 \
         usr/share/doc/hyperoffload/README.md usr/share/doc/hyperoffload/admin.md \
         usr/share/doc/hyperoffload/protocol.md \
         usr/share/doc/hyperoffload/hyperoffloadd.conf.example \
         etc/hyperoffload/hyperoffloadd.conf \
         usr/lib/systemd/system/hyperoffloadd.service \
         usr/include/hyperoffload/client.h usr/include/hyperoffload/version.h; do
  [ -e "$dest/$f" ] || { echo "not installed: /$f"; fail=1; }
done
ls "$dest"/usr/lib/*/libhyperoffload.so.0 "$dest"/usr/lib/*/libhyperoffload.a \
   "$dest"/usr/lib/*/pkgconfig/hyperoffload.pc >/dev/null 2>&1 ||
  ls "$dest"/usr/lib/libhyperoffload.so.0 "$dest"/usr/lib/libhyperoffload.a >/dev/null ||
  { echo "library files missing"; fail=1; }
# the unit names the installed daemon and config
grep -q '^ExecStart=/usr/sbin/hyperoffloadd --config /etc/hyperoffload/hyperoffloadd.conf$' \
  "$dest/usr/lib/systemd/system/hyperoffloadd.service" || { echo "ExecStart"; fail=1; }
# every doc a man page names is installed
for page in "$src"/docs/*.[158]; do
  for name in $(sed -n 's/.*\(\\fI\|^\.I \|^\.IR \)\([A-Za-z0-9_.\\-]*\.\(md\|example\)\).*/\2/p' "$page" |
                sed 's/\\-/-/g') \
              $(grep -o '/usr/share/doc/hyperoffload/[A-Za-z0-9_.-]*' "$page" |
                sed 's|.*/||'); do
    [ -e "$dest/usr/share/doc/hyperoffload/$name" ] ||
      { echo "$(basename "$page") names $name, not installed"; fail=1; }
  done
  # no references into the source tree
  if grep -nE 'docs/[a-z-]+\.md|PLANNER\.md' "$page"; then
    echo "$(basename "$page") points into the source tree"; fail=1
  fi
  # groff renders it without warnings
  if command -v groff >/dev/null; then
    w=$(groff -man -Tutf8 -ww -z "$page" 2>&1 || true)
    [ -z "$w" ] || { echo "$(basename "$page"): $w"; fail=1; }
  fi
done
[ $fail -eq 0 ] && echo "install layout and man page references: OK"
exit $fail
