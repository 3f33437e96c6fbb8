#!/usr/bin/env python3
"""Checks what README.md and docs/*.md say against the tree they ship in, so the docs cannot
drift silently:

  paths     every repository path a doc names (in backticks, or a relative Markdown link)
            exists: `collectives/src/comm.cpp`, `tests/collectives/unit`, `src/nccl/` inside
            the collectives table, [testing](testing.md#results), `src/comm.{h,cpp}`, globs;
  ctest     every ctest selection a doc gives as a command (`ctest ... -R X -L Y`, and the
            current stage's GJ_CURRENT_TESTS='X') selects at least one test of BUILD
            (`ctest -N`); a selection of an area this build did not register at all (no CUDA,
            no torch, no benchmarks) is reported and not counted;
  defaults  every GJ_* variable a doc gives a default for (a table with a "default" column,
            or "`GJ_X` (default Y)") has the default of the one table that defines it:
            collectives/src/config.h (the GJ_COLL_* comments) and agent/src/core/settings.cpp
            (the agent's rows; constants from agent/src/common/defaults.h);
  layout    docs/architecture.md's tables: every file a row names exists (bare names in the
            row's folders), and what a row says a folder or an agent library may use is what
            its files #include (layout_rule.py; its test: docs.layout_rule).

Usage: check_docs.py REPO BUILD   (exit 0 ok, 1 drift found: every finding on its own line,
naming the doc, its line, what it says and what the tree has).
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layout_rule  # noqa: E402

REPO, BUILD = sys.argv[1], sys.argv[2]

# Where a path a doc names may be relative to: the repository, and the folders whose docs
# name files inside them ("src/comm.cpp" in the library's table).
BASES = ["", "collectives", "collectives/src", "collectives/python", "agent", "agent/src", "tests",
         "tests/collectives", "scripts", "docs"]
# Files of other projects that docs cite by their own paths (NCCL's header, Horovod's
# examples), and build outputs: not in this tree by design.
EXTERNAL = {"include/nccl.h", "examples/pytorch", "examples/tensorflow2"}
OUTPUT_FOLDERS = ("build/", "build-")
TOP = {e for e in os.listdir(REPO) if not e.startswith(".") or e == ".ci"}
# Areas a build may leave out (a configuration without CUDA, a machine without torch or
# TensorFlow, GJ_BUILD_BENCH=OFF as in the hardening build): their selections can be empty there.
OPTIONAL_AREAS = ("gpu", "cuda", "torch", "tensorflow", "tf", "gpu-real", "impi", "deb", "bench")
PATH_CHARS = re.compile(r"^[A-Za-z0-9_.\-/{},*+]+$")
FILE_SUFFIXES = (".md", ".cpp", ".h", ".hpp", ".c", ".py", ".sh", ".cmake", ".txt", ".json", ".yaml", ".in",
                 ".cu", ".toml", ".cfg")

findings = []
notes = []


def doc_files():
    files = [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    return [f for f in files if os.path.isfile(f)]


def rel(path):
    return os.path.relpath(path, REPO)


def expand_braces(text):
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(text[: m.start()] + alt + text[m.end():]))
    return out


def exists_somewhere(name, doc_dir):
    for candidate in expand_braces(name):
        found = False
        for base in [doc_dir] + [os.path.join(REPO, b) for b in BASES]:
            full = os.path.join(base, candidate)
            if ("*" in candidate and glob.glob(full)) or os.path.exists(full):
                found = True
                break
        if not found:
            return False
    return True


def looks_like_repo_path(token):
    """A token a reader would open in the tree: slash-separated, starting at a top-level folder
    or at a folder of BASES, or a bare file name with a known suffix next to a folder."""
    if token in EXTERNAL or token.startswith(OUTPUT_FOLDERS):
        return False
    if not PATH_CHARS.match(token) or "/" not in token or "//" in token or token.startswith(("/", "-", "http")):
        return False
    first = token.split("/", 1)[0]
    if first in TOP:
        return True
    # Relative to a base: src/..., include/..., python/... inside the library's docs.
    return first in {"src", "include", "python", "unit", "mpi", "host", "shm", "hierarchical", "package"} and (
        token.endswith(FILE_SUFFIXES) or token.endswith("/"))


def check_paths(doc, lines):
    doc_dir = os.path.dirname(doc)
    for number, line in enumerate(lines, 1):
        for token in re.findall(r"`([^`\s]+)`", line):
            token = token.rstrip(".,:;)")
            token = re.sub(r"#.*$", "", token)
            if "<" in token or "$" in token or "..." in token or not looks_like_repo_path(token):
                continue
            if not exists_somewhere(token, doc_dir):
                findings.append(f"{rel(doc)}:{number}: names `{token}`, which is not in the tree")
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if path and not os.path.exists(os.path.join(doc_dir, path)):
                findings.append(f"{rel(doc)}:{number}: links to {target}, which is not in the tree")


# ---- ctest selections ------------------------------------------------------------------------

def unquote(value):
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def selections(lines):
    """(line number, ctest arguments) of each ctest command or GJ_CURRENT_TESTS regex."""
    out = []
    for number, line in enumerate(lines, 1):
        text = line.replace("\\|", "|")
        for command in re.findall(r"ctest(?:\s+--test-dir\s+\S+)?((?:\s+(?:-[RLE]|-LE|--output-on-failure|-j\d+|"
                                  r"-N)(?:\s+(?:'[^']*'|\"[^\"]*\"|[^\s`'\"|]+))?)+)", text):
            args = re.findall(r"(-LE|-[RLE])\s+('[^']*'|\"[^\"]*\"|[^\s`'\"|]+)", command)
            if args and not any("<" in a for flag, a in args):
                out.append((number, [a for flag, value in args for a in (flag, unquote(value))]))
        for value in re.findall(r"GJ_CURRENT_TESTS=('[^']*'|\"[^\"]*\"|[^\s`]+)", text):
            out.append((number, ["-R", unquote(value)]))
    return out


def ctest_count(args):
    run = subprocess.run(["ctest", "--test-dir", BUILD, "-N"] + args, capture_output=True, text=True)
    m = re.search(r"Total Tests:\s*(\d+)", run.stdout)
    return int(m.group(1)) if m else -1


def registered_areas():
    run = subprocess.run(["ctest", "--test-dir", BUILD, "-N"], capture_output=True, text=True)
    names = re.findall(r"Test\s+#\d+:\s+(\S+)", run.stdout)
    return names


def check_ctest(doc, lines, names):
    for number, args in selections(lines):
        count = ctest_count(args)
        if count > 0:
            continue
        text = " ".join(args)
        optional = [a for a in OPTIONAL_AREAS if a in text]
        if optional and not any(n.startswith(tuple(a + "." for a in optional)) for n in names):
            notes.append(f"{rel(doc)}:{number}: `ctest {text}` selects nothing in this build "
                         f"(no {'/'.join(optional)} tests registered here): not counted")
            continue
        findings.append(f"{rel(doc)}:{number}: `ctest {text}` selects no test of {BUILD} (ctest -N)")


# ---- defaults --------------------------------------------------------------------------------

def config_defaults():
    table = {}
    text = open(os.path.join(REPO, "collectives/src/config.h")).read()
    for var, value in re.findall(r"(GJ_[A-Z_]+)(?:=\S+)?\s*\(default ([^)]+)\)", text):
        table[var] = value.strip()
    consts = {}
    defaults_h = os.path.join(REPO, "agent/src/common/defaults.h")
    if os.path.exists(defaults_h):
        for name, value in re.findall(r"constexpr [\w\s\*]+?\b(k\w+)\s*=\s*([^;]+);", open(defaults_h).read()):
            consts[name] = unquote(value.strip())
    settings = os.path.join(REPO, "agent/src/core/settings.cpp")
    if os.path.exists(settings):
        src = open(settings).read()
        for alias, name in re.findall(r"const std::string (k\w+) = std::to_string\(defaults::(k\w+)\)", src):
            consts[alias] = consts.get(name, "")
        for var, row in re.findall(r'Row\("(GJ_[A-Z_]+)"\)((?:[^;]|;(?!\s*$))*?)(?=,\s*(?://.*\n\s*)*(?:Row|platform)\(|\};)',
                                   src, re.M):
            m = re.search(r'default_value\(("([^"]*)"|(?:defaults::)?(k\w+)(?:\.c_str\(\))?)\)', row)
            if m:
                table[var] = m.group(2) if m.group(2) is not None else consts.get(m.group(3), "")
    return table


UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30}


def normal(value):
    quoted = re.match(r"^\s*`([^`]*)`", value)  # `300` s, `ssh-keygen` (through `PATH`)
    value = (quoted.group(1) if quoted else value).strip()
    m = re.match(r"^(\d+)\s*([KMG](?:iB)?|)\b", value, re.I)
    if m and (m.group(2) or re.match(r"^\d+$", value.split()[0])):
        return str(int(m.group(1)) * UNITS[m.group(2).lower()])
    return value.split()[0].lower() if value else value


def check_defaults(doc, lines, table):
    header = None
    for number, line in enumerate(lines, 1):
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = [c.lower() for c in cells]
                continue
            if set(line.replace("|", "").strip()) <= set("-: "):
                continue
            if "default" in header and len(cells) == len(header):
                said = cells[header.index("default")]
                for var in re.findall(r"`(GJ_[A-Z_]+)`", " ".join(cells[: header.index("default")])):
                    compare(doc, number, var, said, table)
        else:
            header = None
        for var, said in re.findall(r"`(GJ_[A-Z_]+)`\s*\(default:?\s*`?([^`),;]+)", line):
            compare(doc, number, var, said, table)


def compare(doc, number, var, said, table):
    if var not in table or not said or said.startswith("(") or said in ("-", ""):
        return
    if normal(said) != normal(table[var]):
        where = "collectives/src/config.h" if var.startswith("GJ_COLL_") else "agent/src/core/settings.cpp"
        findings.append(f"{rel(doc)}:{number}: says {var} defaults to {said.strip()}; {where} has {table[var]}")


def main():
    if not os.path.isdir(BUILD):
        print(f"check_docs: BUILD={BUILD} is not a build tree; pass the folder ctest runs in")
        return 2
    table = config_defaults()
    names = registered_areas()
    docs = doc_files()
    for doc in docs:
        lines = open(doc, encoding="utf-8").read().splitlines()
        check_paths(doc, lines)
        check_ctest(doc, lines, names)
        check_defaults(doc, lines, table)
        if rel(doc) == os.path.join("docs", "architecture.md"):
            findings.extend(layout_rule.check(REPO, rel(doc), lines))
    for note in notes:
        print("note:", note)
    for finding in findings:
        print("DRIFT:", finding)
    print(f"check_docs: {len(docs)} docs, {len(table)} defaults known, {len(findings)} drifts")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
