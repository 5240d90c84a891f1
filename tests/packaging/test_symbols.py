#!/usr/bin/python3
"""The library's ABI as packaged: libhyperoffload.so.0 exports exactly the
HO_EXPORT functions of the public headers, each versioned HYPEROFFLOAD_0;
libhyperoffload.a defines exactly the same global symbols (no internals);
debian/libhyperoffload0.symbols lists exactly them; the versions of
CMake, debian/changelog and the Python package agree.

    test_symbols.py BUILD_DIR SOURCE_DIR
"""

import os
import re
import subprocess
import sys
import unittest

BUILD, SOURCE = (sys.argv[1:3] if len(sys.argv) >= 3 else
                 (os.environ.get("HO_BUILD_DIR", "build"),
                  os.environ.get("HO_SOURCE_DIR", ".")))
LIB = os.path.join(BUILD, "lib")


def header_api():
    """Names declared HO_EXPORT in client/include/hyperoffload/*.h."""
    names = set()
    inc = os.path.join(SOURCE, "client", "include", "hyperoffload")
    for f in sorted(os.listdir(inc)):
        if not f.endswith(".h"):
            continue
        with open(os.path.join(inc, f), encoding="utf-8") as fh:
            text = fh.read()
        # a declaration runs from HO_EXPORT to the first "(" (the name is
        # the last identifier before it), over line breaks
        for m in re.finditer(r"\bHO_EXPORT\b([^;{(]*)\(", text):
            ids = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", m.group(1))
            if ids and not ids[-1].startswith("__"):  # the #define itself
                names.add(ids[-1])
    return names


def nm(*args):
    out = subprocess.run(["nm"] + list(args), check=True,
                         stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return out.splitlines()


class Symbols(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.api = header_api()

    def test_headers_declare_an_api(self):
        self.assertGreater(len(self.api), 50)
        for n in self.api:
            self.assertTrue(n.startswith("ho_"), n)

    def test_shared_library_exports_the_api_versioned(self):
        so = os.path.join(LIB, "libhyperoffload.so.0")
        exported = {}
        for line in nm("-D", "--defined-only", "--with-symbol-versions", so):
            parts = line.split()
            if len(parts) == 3:
                name, _, ver = parts[2].partition("@")
                exported[name] = ver.lstrip("@")
        exported.pop("HYPEROFFLOAD_0", None)   # the version node itself
        self.assertEqual(set(exported), self.api)
        for name, ver in exported.items():
            self.assertEqual(ver, "HYPEROFFLOAD_0", name)

    def test_static_archive_defines_only_the_api(self):
        a = os.path.join(LIB, "libhyperoffload.a")
        defined = {line.split()[2] for line in
                   nm("-g", "--defined-only", a)
                   if len(line.split()) == 3}
        self.assertEqual(defined - self.api, set(),
                         "internal names global in the archive")
        self.assertEqual(self.api - defined, set(), "API missing")

    def test_debian_symbols_file(self):
        path = os.path.join(SOURCE, "debian", "libhyperoffload0.symbols")
        listed = set()
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0],
                         "libhyperoffload.so.0 libhyperoffload0 #MINVER#")
        for line in lines[1:]:
            if line.startswith(" "):
                sym, ver = line.split()
                name, _, node = sym.partition("@")
                self.assertEqual(node, "HYPEROFFLOAD_0", line)
                self.assertRegex(ver, r"^\d+\.\d+\.\d+")
                if name != "HYPEROFFLOAD_0":
                    listed.add(name)
        self.assertEqual(listed, self.api)

    def test_versions_agree(self):
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
            cmake = re.search(r"project\(hyperoffload VERSION ([0-9.]+)",
                              f.read()).group(1)
        with open(os.path.join(SOURCE, "debian", "changelog")) as f:
            deb = re.match(r"hyperoffload \(([^)]+)\)", f.readline()).group(1)
        with open(os.path.join(SOURCE, "python", "pyproject.toml")) as f:
            py = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
        with open(os.path.join(SOURCE, "python", "hyperoffload",
                               "__init__.py")) as f:
            init = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)
        self.assertEqual(deb.split("-")[0], cmake)
        self.assertEqual(py, cmake)
        self.assertEqual(init, cmake)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
