#!/usr/bin/env python3
"""The preloaded diagnostics in tools/ stay usable: fault_reporter.c prints the
faulting thread's backtrace and the process still dies of its signal, and
atexit_logger.c logs the exit handlers a C++ program registers.

usage: preload_tools_test.py SOURCE_ROOT CC TROPICAL_EXE
"""

import os
import signal
import subprocess
import sys
import tempfile
import unittest

ROOT, CC, TROPICAL = sys.argv[1], sys.argv[2], sys.argv[3]


class PreloadTools(unittest.TestCase):
    def build(self, name):
        out = os.path.join(self.tmp.name, name + ".so")
        subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", out, os.path.join(ROOT, "tools", name + ".c"), "-ldl"],
                       check=True, capture_output=True)
        return out

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_fault_reporter_prints_the_backtrace_and_the_process_dies_of_its_signal(self):
        env = dict(os.environ, LD_PRELOAD=self.build("fault_reporter"))
        # ctypes reads address 0: a SIGSEGV in this process's main thread.
        run = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.string_at(0)"], env=env,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, -signal.SIGSEGV, run.stderr)
        self.assertIn("[segv] signal 11 at (nil) in tid", run.stderr)
        self.assertRegex(run.stderr, r"\[segv\]  #\d+ \S*python\S*\+0x[0-9a-f]+")

    def test_the_atexit_logger_logs_the_programs_exit_handlers(self):
        env = dict(os.environ, LD_PRELOAD=self.build("atexit_logger"))
        run = subprocess.run([TROPICAL, "--version"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(run.stderr, r"\[atexit\] \d+\.\d{3} tid=\d+ fn=libtropical\S*\+0x[0-9a-f]+")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
