"""docs/architecture.md's layout tables against the tree (a rule of check_docs.py).

Two checks, both on the tables of docs/architecture.md only:

  names  every file a table row names exists: a path (`src/mpi/`, `shm/arrivals.h`) as
         check_docs.py's path rule reads it, and a bare file name (`host_backend.cpp`,
         `op.h`) in a folder the same row names (`src/mpi/`, `(agent/src/text)`, tests/agent),
         in the library's or the agent's source folder, or in the row's folders' subfolders;
  edges  what a row says its folder may use is what its files include:
         - the agent's table (header "target | what | may depend on"): a row
           `` `gj_agent_sys` (agent/src/sys) `` may depend on the targets its last cell names
           ("common, text", "nothing", "all of the above", `gj_bool_word`; words in
           parentheses are comments), and every quoted #include of a file in agent/src/sys
           (found as the compiler finds it: next to the file, in a library folder, in agent/src)
           must be a header of the row's own library or of one it may depend on;
         - the library's table (header "file / folder | what | may use"): a row of folders
           (`src/shm/`) may use the folders (`host/`) and headers (`mpi/mpi_check.h`: that
           header of the folder only) its last cell names ("everything below": any; "-", "MPI",
           "nothing": none), and every quoted #include of a file in the folder that lands in
           another folder of collectives/src must be one of them. Headers at the top of
           collectives/src (error.h, dtype.h) are the library's base, not a folder: not checked.

The functions take the repository root and the document's lines and return findings, one
string each naming the doc's line, what it says and what the tree has; tests/docs/
test_layout_rule.py runs them on a small fixture tree.
"""
import os
import re

FILE_SUFFIXES = (".md", ".cpp", ".h", ".hpp", ".c", ".py", ".sh", ".cmake", ".txt", ".json", ".yaml", ".in",
                 ".cu", ".toml", ".cfg")
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".c", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Where a bare name of a row may live besides the row's own folders.
NAME_BASES = ["", "agent/src", "collectives", "collectives/src", "collectives/include", "collectives/python"]


def tables(lines):
    """[(header cells lowercased, [(line number, cells)])] of each Markdown table."""
    out, header, rows = [], None, []
    for number, line in enumerate(lines, 1):
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = [c.lower() for c in cells]
            elif not set(line.replace("|", "").strip()) <= set("-: "):
                rows.append((number, cells))
            continue
        if header is not None:
            out.append((header, rows))
        header, rows = None, []
    if header is not None:
        out.append((header, rows))
    return out


def without_comments(text):
    """The cell without its parenthesized remarks (nested parentheses included)."""
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"\([^()]*\)", "", text)
    return text


def ticks(text):
    return re.findall(r"`([^`]+)`", text)


def expand_braces(text):
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(text[: m.start()] + alt + text[m.end():]))
    return out


# ---- names -----------------------------------------------------------------------------------

def row_folders(repo, row_text):
    """Existing folders a row names (backticked or not): its files' homes."""
    out = []
    for word in re.findall(r"[A-Za-z0-9_.\-/{}]+/[A-Za-z0-9_.\-/{}]*", row_text):
        word = word.rstrip(".,:;")
        for candidate in expand_braces(word):
            for base in NAME_BASES:
                full = os.path.normpath(os.path.join(repo, base, candidate))
                if os.path.isdir(full):
                    out.append(full)
                elif os.path.isfile(full):
                    out.append(os.path.dirname(full))
    return out


def name_exists(repo, name, folders):
    for candidate in expand_braces(name):
        places = folders + [os.path.join(repo, b) for b in NAME_BASES]
        if any(os.path.exists(os.path.join(p, candidate)) for p in places):
            continue
        # A subfolder of a row's folder (`ip_address.cpp` of the text library's folder tree).
        if any(candidate in files for f in folders for _, _, files in os.walk(f)):
            continue
        return False
    return True


def check_names(repo, doc, lines):
    findings = []
    for header, rows in tables(lines):
        for number, cells in rows:
            row_text = " ".join(cells)
            folders = row_folders(repo, row_text)
            for token in ticks(row_text):
                token = token.strip().rstrip(".,:;")
                if "/" in token or " " in token or not token.endswith(FILE_SUFFIXES) or "<" in token:
                    continue
                if token.startswith(("lib", "-")) or "*" in token:
                    continue
                if not name_exists(repo, token, folders):
                    findings.append(f"{doc}:{number}: names `{token}`, which is in none of the row's folders "
                                    f"({', '.join(sorted({os.path.relpath(f, repo) for f in folders})) or 'none named'})")
    return findings


# ---- edges -----------------------------------------------------------------------------------

def sources(folder, skip):
    """Source files in folder and its subfolders, but not in the folders of `skip`."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if os.path.join(root, d) not in skip)
        for f in sorted(files):
            if f.endswith(SOURCE_SUFFIXES):
                yield os.path.join(root, f)


def includes(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return INCLUDE.findall(f.read())
    except OSError:
        return []


def resolve(name, places):
    for place in places:
        full = os.path.normpath(os.path.join(place, name))
        if os.path.isfile(full):
            return full
    return None


def owners_of(path, folders):
    """The keys of the deepest folder in `folders` (key -> folder) holding path (several when
    libraries share that folder)."""
    holding = [f for f in folders.values() if path.startswith(f + os.sep)]
    if not holding:
        return set()
    deepest = max(holding, key=len)
    return {key for key, folder in folders.items() if folder == deepest}


def agent_rows(repo, lines):
    """[(line, target, folder or None, may-depend-on cell)] of the agent's library table, and
    {target: folder} for every target a cell places (`gj_bool_word` (collectives/src/common))."""
    rows, places = [], {}
    for header, body in tables(lines):
        if not header or not header[0].startswith("target") or not any("may depend on" in h for h in header):
            continue
        deps = [i for i, h in enumerate(header) if "may depend on" in h][0]
        for number, cells in body:
            if len(cells) <= deps:
                continue
            targets = re.findall(r"`(gj_\w+)`", cells[0])
            if not targets:
                continue
            m = re.search(r"\(((?:agent|collectives)/[\w/]+)\)", cells[0])
            folder = os.path.normpath(os.path.join(repo, m.group(1))) if m else None
            rows.append((number, targets[0], folder, cells[deps]))
            for cell in cells:
                for target, where in re.findall(r"`(gj_\w+)`\s*\(((?:agent|collectives)/[\w/]+)", cell):
                    places.setdefault(target, os.path.normpath(os.path.join(repo, where)))
            if folder:
                places[targets[0]] = folder
    return rows, places


def allowed_targets(cell, earlier, targets):
    text = without_comments(cell)
    if re.search(r"\ball of the above\b", text):
        return set(earlier)
    if re.search(r"^\s*(nothing|-)\s*$", text):
        return set()
    allowed = set(re.findall(r"`(gj_\w+)`", text))
    words = set(re.findall(r"[a-z_]+", re.sub(r"`[^`]*`", " ", text)))
    for target in targets:
        short = target.rsplit("_", 1)[-1]
        if short in words:
            allowed.add(target)
    return allowed


def check_agent_edges(repo, doc, lines):
    rows, places = agent_rows(repo, lines)
    findings = []
    if not rows:
        return findings
    targets = [t for _, t, _, _ in rows]
    folders = {t: f for t, f in places.items() if f and os.path.isdir(f)}
    shared = {f for f in folders.values() if list(folders.values()).count(f) > 1}
    agent_src = os.path.join(repo, "agent", "src")
    earlier = []
    for number, target, folder, cell in rows:
        allowed = allowed_targets(cell, earlier, targets) | {target}
        earlier.append(target)
        if not folder or not os.path.isdir(folder):
            if folder:
                findings.append(f"{doc}:{number}: places {target} in {os.path.relpath(folder, repo)}, "
                                f"which is not a folder of the tree")
            continue
        if folder in shared:  # two libraries in one folder: a file's library is not the folder's
            continue
        others = {f for t, f in folders.items() if f != folder}
        for path in sources(folder, others):
            for name in includes(path):
                found = resolve(name, [os.path.dirname(path)] + sorted(set(folders.values())) + [agent_src])
                if not found:
                    continue
                used = owners_of(found, folders)
                if not used or used & allowed or any(folders[u] == folder for u in used):
                    continue
                findings.append(f"{doc}:{number}: says {target} may depend on "
                                f"{', '.join(sorted(allowed - {target})) or 'nothing'}; "
                                f"{os.path.relpath(path, repo)} includes \"{name}\" "
                                f"({' or '.join(sorted(used))}, {os.path.relpath(found, repo)})")
    return findings


def library_rows(lines):
    """[(line, [folder names], may-use cell)] of the collectives table's rows of src/ folders."""
    out = []
    for header, body in tables(lines):
        if not header or "folder" not in header[0] or not any(h.startswith("may use") for h in header):
            continue
        use = [i for i, h in enumerate(header) if h.startswith("may use")][0]
        for number, cells in body:
            names = [t.strip() for t in ticks(cells[0])]
            folders = [n[len("src/"):-1] for n in names if re.match(r"^src/[\w-]+/$", n)]
            if folders and len(cells) > use:
                out.append((number, folders, cells[use]))
    return out


def allowed_uses(cell):
    """(everything, folder names, header paths) a may-use cell allows."""
    text = without_comments(cell)
    if re.search(r"\beverything\b", text):
        return True, set(), set()
    folders, headers = set(), set()
    for token in ticks(text):
        token = token.strip()
        if re.match(r"^[\w-]+/$", token):
            folders.add(token[:-1])
        elif "/" in token:
            for t in expand_braces(token):
                headers.add(os.path.normpath(t))
    return False, folders, headers


def check_library_edges(repo, doc, lines):
    src = os.path.join(repo, "collectives", "src")
    include = os.path.join(repo, "collectives", "include")
    findings = []
    if not os.path.isdir(src):
        return findings
    for number, names, cell in library_rows(lines):
        everything, folders, headers = allowed_uses(cell)
        for name in names:
            folder = os.path.join(src, name)
            if not os.path.isdir(folder):
                findings.append(f"{doc}:{number}: names `src/{name}/`, which is not a folder of collectives/src")
                continue
            if everything:
                continue
            for path in sources(folder, set()):
                for inc in includes(path):
                    found = resolve(inc, [os.path.dirname(path), src, include])
                    if not found or not found.startswith(src + os.sep):
                        continue
                    inside = os.path.relpath(found, src)
                    if os.sep not in inside:
                        continue  # the library's base headers (error.h, dtype.h): not a folder
                    used = inside.split(os.sep, 1)[0]
                    if used == name or used in folders or inside in headers:
                        continue
                    said = sorted([f + "/" for f in folders] + sorted(headers))
                    findings.append(f"{doc}:{number}: says src/{name}/ may use {', '.join(said) or 'no folder'}; "
                                    f"{os.path.relpath(path, repo)} includes \"{inc}\" (src/{inside})")
    return findings


def check(repo, doc, lines):
    """Every finding of docs/architecture.md's tables against the tree under repo."""
    repo = os.path.abspath(repo)  # paths are compared by prefix
    return check_names(repo, doc, lines) + check_agent_edges(repo, doc, lines) + check_library_edges(repo, doc, lines)
