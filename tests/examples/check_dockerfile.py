#!/usr/bin/env python3
"""Static checks of examples/docker/Dockerfile (no docker engine needed; hadolint is not in Debian).

    check_dockerfile.py <repo root> [--self-test]

Checks: every ARG used in FROM is declared before the first FROM with a default; stage names
are unique and COPY --from names an earlier stage; every context COPY source exists in the
repository; every directory the top-level CMakeLists.txt adds is copied or switched off with
-DGJ_BUILD_*=OFF, and every -DGJ_* flag is a real option; the runtime stage installs
openssh-server and openmpi-bin (the platform needs /usr/sbin/sshd and mpiexec); the files it
copies from the build stage are the DESTDIR + CMAKE_INSTALL_PREFIX the build stage installs to,
and ENTRYPOINT is <prefix>/bin/gj-mpirun (the install layout) in exec form, the same path as
the commands in examples/platform/*.yaml; apt-get installs are -y --no-install-recommends and
clean their lists. --self-test breaks the Dockerfile in known ways and expects each reported.
"""

import json
import os
import re
import shlex
import sys


def instructions(text):
    """[(line number, INSTRUCTION, arguments)] with continuations joined, comments dropped."""
    out, buf, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if buf and s.startswith("#"):
            continue
        if not buf:
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        word, _, rest = buf.partition(" ")
        out.append((start, word.upper(), rest.strip()))
        buf = ""
    return out


def cmake_options(root):
    text = open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8").read()
    opts = set(re.findall(r"option\(\s*(GJ_\w+)", text)) | set(re.findall(r"set\(\s*(GJ_\w+)\s.*CACHE", text))
    # add_subdirectory(x) -> the GJ_ option of the innermost enclosing if(), or None.
    subdirs, stack = {}, []
    for line in text.splitlines():
        s = line.split("#", 1)[0].strip()
        m = re.match(r"if\s*\((.*)\)", s)
        if m:
            stack.append(m.group(1).strip())
        elif re.match(r"endif\s*\(", s):
            stack.pop()
        m = re.match(r"add_subdirectory\(\s*([\w./-]+)", s)
        if m:
            # if(GJ_A AND GJ_B): the folder is left out when any of them is OFF.
            cond = stack[-1].split() if stack else []
            names = [w for w in cond if w != "AND"]
            subdirs[m.group(1)] = names if names and all(w.startswith("GJ_") for w in names) else None
    return opts, subdirs


def check(text, root):
    errs = []
    ins = instructions(text)
    first_from = next((i for i, (_, w, _) in enumerate(ins) if w == "FROM"), None)
    if first_from is None:
        return ["no FROM instruction"]
    global_args = {}
    for _, w, a in ins[:first_from]:
        if w == "ARG":
            name, eq, default = a.partition("=")
            global_args[name] = default if eq else None
    stages, stage_lines, cur = [], {}, None
    for n, w, a in ins:
        if w == "FROM":
            parts = a.split()
            for var in re.findall(r"\$\{?(\w+)", parts[0]):
                if global_args.get(var) in (None, ""):
                    errs.append(f"line {n}: FROM uses ${var}, which needs an ARG {var}=<default> before the first FROM")
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else str(len(stages))
            if name in stages:
                errs.append(f"line {n}: stage name {name!r} used twice")
            stages.append(name)
            cur = name
            stage_lines[cur] = []
        if cur is not None:
            stage_lines[cur].append((n, w, a))

    opts, subdirs = cmake_options(root)
    build_flags = {}
    copied = set()
    for n, w, a in ins:
        if w == "RUN":
            for flag, val in re.findall(r"-D(GJ_\w+)=(\w+)", a):
                if flag not in opts:
                    errs.append(f"line {n}: -D{flag} is not an option of CMakeLists.txt ({sorted(opts)})")
                build_flags[flag] = val
            if "apt-get install" in a:
                for need in ("-y", "--no-install-recommends"):
                    if need not in a.split():
                        errs.append(f"line {n}: apt-get install without {need}")
                if "rm -rf /var/lib/apt/lists" not in a:
                    errs.append(f"line {n}: apt-get install without rm -rf /var/lib/apt/lists/* in the same RUN")
        if w in ("COPY", "ADD"):
            words = shlex.split(a)
            flags = [x for x in words if x.startswith("--")]
            paths = [x for x in words if not x.startswith("--")]
            src = paths[:-1]
            frm = next((f.split("=", 1)[1] for f in flags if f.startswith("--from=")), None)
            if frm is None:
                for s in src:
                    if not os.path.exists(os.path.join(root, s)):
                        errs.append(f"line {n}: COPY source {s!r} does not exist in the build context {root}")
                    copied.add(s.strip("/").rstrip("/") or ".")
            elif frm not in stages[: stages.index(current_stage(stage_lines, n))]:
                errs.append(f"line {n}: COPY --from={frm} names no earlier stage ({stages})")
    for d, opt in subdirs.items():
        if d not in copied and not (opt and any(build_flags.get(o) == "OFF" for o in opt)):
            errs.append(f"CMakeLists.txt adds {d}/ but the build stage neither copies it nor sets "
                        f"-D{' or -D'.join(opt) if opt else '?'}=OFF")

    runtime = stage_lines[stages[-1]]
    apt = " ".join(a for _, w, a in runtime if w == "RUN" and "apt-get install" in a)
    for pkg in ("openssh-server", "openmpi-bin"):
        if pkg not in apt.split():
            errs.append(f"final stage does not apt-get install {pkg} (the platform needs /usr/sbin/sshd and mpiexec)")

    install_root, prefix = None, ""
    for _, w, a in ins:
        m_dest = re.search(r"DESTDIR=(\S+)\s+cmake --install", a) if w == "RUN" else None
        m_pre = re.search(r"-DCMAKE_INSTALL_PREFIX=(\S+)", a) if w == "RUN" else None
        if m_pre:
            prefix = m_pre.group(1)
        if m_dest:
            install_root = m_dest.group(1).rstrip("/") + prefix
    entry_dir = None
    for n, w, a in runtime:
        if w == "COPY" and "--from=" in a:
            src, dest = shlex.split(a)[-2:]
            if install_root is None or src.rstrip("/") != install_root.rstrip("/"):
                errs.append(f"line {n}: COPY --from source {src!r} is not the build stage's install root {install_root!r}")
            entry_dir = dest.rstrip("/")
    entry = [a for _, w, a in runtime if w == "ENTRYPOINT"]
    if not entry:
        errs.append("final stage has no ENTRYPOINT")
    else:
        try:
            argv = json.loads(entry[-1])
        except ValueError:
            argv = None
            errs.append(f"ENTRYPOINT {entry[-1]} is not in exec (JSON) form; signals would go to a shell")
        want = f"{entry_dir}/bin/gj-mpirun"
        if argv is not None and argv[0] != want:
            errs.append(f"ENTRYPOINT runs {argv[0]} but the install layout puts gj-mpirun at {want}")
        platform_dir = os.path.join(root, "examples", "platform")
        for name in sorted(os.listdir(platform_dir)) if os.path.isdir(platform_dir) else []:
            if name.endswith(".yaml"):
                cmds = set(re.findall(r'command:\s*\["([^"]+)"', open(os.path.join(platform_dir, name)).read()))
                if argv and cmds != {argv[0]}:
                    errs.append(f"examples/platform/{name} runs {sorted(cmds)}, the image has {argv[0]}")
    for _, w, a in runtime:
        if w == "CMD" and not a.startswith("["):
            errs.append(f"CMD {a} is not in exec (JSON) form")
    return errs


def current_stage(stage_lines, line):
    for name, lines in stage_lines.items():
        if any(n == line for n, _, _ in lines):
            return name
    raise KeyError(line)


BREAKAGES = [
    ("COPY source missing", "COPY agent/ agent/", "COPY agnet/ agent/"),
    ("COPY --from unknown stage", "--from=build", "--from=builder"),
    ("sshd not installed", "openssh-server openssh-client", "openssh-client"),
    ("entrypoint path off the layout", 'ENTRYPOINT ["/usr/local/bin/gj-mpirun"]', 'ENTRYPOINT ["/usr/bin/gj-mpirun"]'),
    ("shell-form entrypoint", 'ENTRYPOINT ["/usr/local/bin/gj-mpirun"]', "ENTRYPOINT /usr/local/bin/gj-mpirun"),
    ("unknown cmake option", "-DGJ_BUILD_BENCH=OFF", "-DGJ_BUILD_BENCHES=OFF"),
    ("subdirectory not copied", "COPY packaging/ packaging/\n", ""),
    ("install root mismatch", "DESTDIR=/out", "DESTDIR=/stage"),
    ("ARG without default", "ARG BASE_IMAGE=debian:12", "ARG BASE_IMAGE"),
    ("apt lists kept", "&& rm -rf /var/lib/apt/lists/*\n# bin", "\n# bin"),
]


def main(argv):
    root = os.path.abspath(next((a for a in argv if not a.startswith("--")), "."))
    path = os.path.join(root, "examples", "docker", "Dockerfile")
    text = open(path, encoding="utf-8").read()
    errs = check(text, root)
    for e in errs:
        print(f"{path}: {e}", file=sys.stderr)
    if errs:
        return 1
    print(f"{path}: ok")
    if "--self-test" in argv:
        missed = []
        for what, old, new in BREAKAGES:
            if old not in text:
                missed.append(f"{what} (text {old!r} not found to break)")
            elif not check(text.replace(old, new, 1), root):
                missed.append(what)
        for m in missed:
            print(f"{path}: self-test: breakage not detected: {m}", file=sys.stderr)
        return 1 if missed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
