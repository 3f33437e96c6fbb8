"""The gj package itself (no MPI job): where it loads the library from, and the import error."""

import os
import subprocess
import sys


def _python(code, **env):
    full = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=60)


def test_build_tree_copy_loads_its_recorded_library():
    out = _python("import gj, gj._config as c; print(gj.library_path); print(c.library_path())",
                  GJ_COLLECTIVES_LIB="")
    assert out.returncode == 0, out.stderr
    loaded, recorded = out.stdout.split()
    assert loaded == recorded and loaded.endswith("libgj_collectives.so.0")


def test_missing_library_names_every_place_tried():
    out = _python("import gj", GJ_COLLECTIVES_LIB="/nonexistent/libgj_collectives.so")
    assert out.returncode != 0
    assert "ImportError" in out.stderr
    assert "/nonexistent/libgj_collectives.so ($GJ_COLLECTIVES_LIB: absent)" in out.stderr
    assert "Set GJ_COLLECTIVES_LIB" in out.stderr


def test_library_lacking_a_symbol_is_refused_naming_it(tmp_path):
    # A real shared library that exports all of gj's C ABI but gjTest: what a stale build is.
    from gj import _lib
    names = [n for n in _lib.SIGNATURES if n != "gjTest"]
    src = tmp_path / "stub.c"
    src.write_text("".join(f"int {n}(void) {{ return 0; }}\n" for n in names))
    stub = tmp_path / "libgj_collectives.so.0"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(stub), str(src)], check=True, timeout=60)
    out = _python("import gj", GJ_COLLECTIVES_LIB=str(stub))
    assert out.returncode != 0
    assert "ImportError" in out.stderr
    assert f"the collectives library {stub} has no symbol gjTest" in out.stderr
    assert "Rebuild and reinstall gj" in out.stderr


def test_public_api_is_horovods():
    out = _python("import gj.torch as h; missing = [n for n in h.__all__ if not hasattr(h, n)]; "
                  "print(missing); print(h.Average, h.Sum, h.Adasum, h.Min, h.Max, h.Product)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "0 1 2 3 4 5"]


def _header_enums():
    """{name: value} of collectives.h's enumerators and #define constants."""
    import pathlib
    import re
    header = pathlib.Path(__file__).resolve().parents[2] / "collectives" / "include" / "gj" / "collectives.h"
    text = header.read_text()
    values = {m[0]: int(m[1]) for m in re.findall(r"^\s*(gj\w+)\s*=\s*(\d+)\s*,?", text, re.M)}
    values.update({m[0]: int(m[1]) for m in re.findall(r"^#define\s+(gj\w+)\s+(\d+)\s*$", text, re.M)})
    return values


def test_python_constants_equal_the_headers():
    from gj import _lib
    h = _header_enums()
    pairs = {
        "SUCCESS": "gjSuccess", "INVALID_ARGUMENT": "gjInvalidArgument", "INVALID_USAGE": "gjInvalidUsage",
        "UNSUPPORTED": "gjUnsupported",
        "FLOAT32": "gjFloat32", "FLOAT64": "gjFloat64", "FLOAT16": "gjFloat16", "BFLOAT16": "gjBfloat16",
        "INT32": "gjInt32", "INT64": "gjInt64", "UINT8": "gjUint8", "INT8": "gjInt8", "INT16": "gjInt16",
        "BOOL": "gjBool", "BYTE": "gjByte", "NUM_REDUCIBLE": "gjNumReducibleDataTypes",
        "SUM": "gjSum", "AVG": "gjAvg", "MIN": "gjMin", "MAX": "gjMax", "PROD": "gjProd",
        "CAP_CUDA": "gjCapCuda", "CAP_NCCL": "gjCapNccl",
    }
    assert {py: getattr(_lib, py) for py in pairs} == {py: h[c] for py, c in pairs.items()}
    assert _lib.BYTE + 1 == h["gjNumDataTypes"] and len(_lib.OPS) == h["gjNumRedOps"]


def test_import_leaves_the_excepthook_alone():
    """The exit hooks are init()'s: importing a frontend changes nothing of the interpreter's."""
    code = ("import sys; before = sys.excepthook; import gj.torch; import gj.common.basics; "
            "assert sys.excepthook is before, sys.excepthook; "
            "import atexit, gj.common.exit_hooks as h; assert h._owner is None; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
