#!/usr/bin/env python3
"""docs.layout_rule: layout_rule.py (docs.check's architecture.md rule) on a small fixture tree:
a layout that agrees with its tables passes, and each kind of drift is found and named: an
include across an edge the table does not state (agent library, library folder, a header of a
folder when only another header of it is allowed), a remark in parentheses that must not grant
an edge, a table naming a file that is not there."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layout_rule  # noqa: E402

ARCHITECTURE = """# Architecture

| target (folder) | what | may depend on |
|---|---|---|
| `gj_agent_common` (agent/src/common) | exit codes (`exit_codes.h`) | nothing |
| `gj_agent_text` (agent/src/text) | quoting (`quote.h`) | common |
| `gj_agent_core` (agent/src/core) | planning (`plan.h`) | common, text, `gj_bool_word` (collectives/src/common) (CMake fails if it links `gj_agent_sys`) |
| `gj_agent_sys` (agent/src/sys) | side effects (`spawn.cpp`) | common, text |
| `gj_agent_app` (agent/src/app) | the roles (`roles.cpp`) | all of the above |

| file / folder | what | may use |
|---|---|---|
| `src/error.h`, `dtype.h` | the base | - |
| `src/mpi_base/` | MPI helpers: `mpi_check.h`, `mpi_wait.cpp` | MPI |
| `src/host/` | kernels (`reduce.h`) | - |
| `src/shm/` | the engine (`engine.cpp`) | `host/`, `mpi_base/mpi_check.h` (and nothing of `peer/`) |
| `src/api/` | entry points | everything below |
"""

FILES = {
    "agent/src/common/exit_codes.h": "",
    "agent/src/text/quote.h": '#include "exit_codes.h"\n',
    "agent/src/core/plan.h": '#include "quote.h"\n#include "bool_word.h"\n#include <string>\n',
    "agent/src/sys/spawn.cpp": '#include "quote.h"\n#include "exit_codes.h"\n',
    "agent/src/app/roles.cpp": '#include "plan.h"\n#include "sys/spawn.h"\n#include "spawn.h"\n',
    "collectives/src/common/bool_word.h": "",
    "collectives/src/error.h": "",
    "collectives/src/dtype.h": "",
    "collectives/src/mpi_base/mpi_check.h": '#include "../error.h"\n',
    "collectives/src/mpi_base/mpi_wait.h": "",
    "collectives/src/mpi_base/mpi_wait.cpp": '#include "mpi_base/mpi_wait.h"\n#include "mpi_base/mpi_check.h"\n',
    "collectives/src/host/reduce.h": '#include "error.h"\n#include "dtype.h"\n',
    "collectives/src/shm/engine.cpp": '#include "host/reduce.h"\n#include "mpi_base/mpi_check.h"\n'
                                      '#include "shm/engine.h"\n#include "error.h"\n#include <mpi.h>\n',
    "collectives/src/shm/engine.h": "",
    "collectives/src/peer/check.h": "",
    "collectives/src/api/entry.cpp": '#include "shm/engine.h"\n#include "peer/check.h"\n',
}


class LayoutRuleTest(unittest.TestCase):
    def setUp(self):
        self.repo = tempfile.mkdtemp(prefix="gj-layout-")
        for path, text in FILES.items():
            self.write(path, text)
        self.doc = ARCHITECTURE

    def tearDown(self):
        shutil.rmtree(self.repo)

    def write(self, path, text):
        full = os.path.join(self.repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    def append(self, path, text):
        with open(os.path.join(self.repo, path), "a") as f:
            f.write(text)

    def findings(self):
        return layout_rule.check(self.repo, "docs/architecture.md", self.doc.splitlines())

    def test_a_layout_that_agrees_with_its_tables_passes(self):
        self.assertEqual(self.findings(), [])

    def test_an_agent_library_including_a_library_it_may_not_use_is_found(self):
        self.append("agent/src/sys/spawn.cpp", '#include "plan.h"\n')
        found = self.findings()
        self.assertEqual(len(found), 1, found)
        self.assertIn("docs/architecture.md:8: says gj_agent_sys may depend on gj_agent_common, gj_agent_text", found[0])
        self.assertIn('agent/src/sys/spawn.cpp includes "plan.h" (gj_agent_core, agent/src/core/plan.h)', found[0])

    def test_a_remark_in_parentheses_grants_no_edge(self):
        self.append("agent/src/core/plan.h", '#include "sys/spawn.cpp"\n')
        found = self.findings()
        self.assertEqual(len(found), 1, found)
        self.assertIn("says gj_agent_core may depend on", found[0])
        self.assertIn("(gj_agent_sys, agent/src/sys/spawn.cpp)", found[0])

    def test_nothing_means_no_other_library(self):
        self.append("agent/src/common/exit_codes.h", '#include "quote.h"\n')
        found = self.findings()
        self.assertEqual(len(found), 1, found)
        self.assertIn("says gj_agent_common may depend on nothing", found[0])

    def test_a_library_folder_including_an_undeclared_folder_is_found(self):
        self.append("collectives/src/host/reduce.h", '#include "shm/engine.h"\n')
        found = self.findings()
        self.assertEqual(len(found), 1, found)
        self.assertIn("docs/architecture.md:15: says src/host/ may use no folder", found[0])
        self.assertIn('collectives/src/host/reduce.h includes "shm/engine.h" (src/shm/engine.h)', found[0])

    def test_only_the_named_header_of_a_folder_is_allowed(self):
        self.append("collectives/src/shm/engine.cpp", '#include "../mpi_base/mpi_wait.h"\n')
        found = self.findings()
        self.assertEqual(len(found), 1, found)
        self.assertIn("says src/shm/ may use host/, mpi_base/mpi_check.h", found[0])
        self.assertIn("(src/mpi_base/mpi_wait.h)", found[0])

    def test_a_folder_that_may_use_nothing_but_mpi_is_held_to_it(self):
        self.append("collectives/src/mpi_base/mpi_wait.cpp", '#include "peer/check.h"\n')
        found = self.findings()
        self.assertEqual(len(found), 1, found)
        self.assertIn("says src/mpi_base/ may use no folder", found[0])

    def test_a_named_file_that_is_gone_is_found(self):
        os.remove(os.path.join(self.repo, "collectives/src/mpi_base/mpi_wait.cpp"))
        found = self.findings()
        self.assertEqual(len(found), 1, found)
        self.assertIn("docs/architecture.md:14: names `mpi_wait.cpp`", found[0])

    def test_a_table_folder_that_is_gone_is_found(self):
        self.doc = self.doc.replace("`src/host/`", "`src/kernels/`")
        found = self.findings()
        self.assertTrue(any("names `src/kernels/`, which is not a folder of collectives/src" in f for f in found), found)


if __name__ == "__main__":
    unittest.main(verbosity=2)
