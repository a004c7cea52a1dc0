"""The `tropical` command without a GPU: every subcommand that needs none,
bad flags and their exit codes, and an unwritable cache.

Usage: cli_test.py PATH_TO_TROPICAL
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TROPICAL = os.path.abspath(sys.argv[1])
KERNEL = "tropical_gemm_maxplus_f32"
CHEAP = "tropical_backward_a_maxplus_f32"  # compiles in some 30 ms


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tropical-cli-")
        self.env = dict(os.environ, TROPICAL_CACHE_DIR=os.path.join(self.tmp, "cache"))
        self.env.pop("TROPICAL_CACHE_DISABLE", None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_tropical(self, *args, env=None, code=0):
        proc = subprocess.run([TROPICAL, *args], capture_output=True, text=True, env=env or self.env, timeout=600)
        self.assertEqual(proc.returncode, code, f"tropical {' '.join(args)}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def test_help_lists_every_command_and_each_command_has_help(self):
        out = self.run_tropical("--help").stdout
        for command in ["list", "warm", "stats", "clear", "compile", "gemm", "verify"]:
            self.assertIn(command, out)
            self.assertIn("usage: tropical " + command, self.run_tropical(command, "--help").stdout)

    def test_bad_usage_exits_2_with_a_clear_message(self):
        self.assertIn("usage", self.run_tropical(code=2).stderr)
        self.assertIn("unknown command 'frobnicate'", self.run_tropical("frobnicate", code=2).stderr)
        self.assertIn("unknown option --bogus", self.run_tropical("list", "--bogus", code=2).stderr)
        self.assertIn("--all or kernel names", self.run_tropical("warm", code=2).stderr)
        self.assertIn("--all or kernel names", self.run_tropical("warm", "--all", KERNEL, code=2).stderr)
        self.assertIn("no kernel named 'nope'", self.run_tropical("warm", "nope", code=2).stderr)
        self.assertIn("bad architecture 'sm_xx'", self.run_tropical("warm", "--arch", "sm_xx", "--all", code=2).stderr)
        self.assertIn("--arch needs a value", self.run_tropical("list", "--arch", code=2).stderr)
        self.assertIn("-j wants a non-negative integer", self.run_tropical("warm", "-j", "two", "--all", code=2).stderr)
        self.assertIn("unknown --semiring", self.run_tropical("gemm", "--semiring", "plusmax", code=2).stderr)
        self.assertIn("compile wants one kernel name", self.run_tropical("compile", code=2).stderr)

    def test_file_size_limit_is_one_warning_not_a_signal(self):
        # Issue 10: (ulimit -f 50; tropical warm ...) used to die of SIGXFSZ (exit 153). Nothing is masked here.
        import resource

        def small_file_limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # ulimit -f 4: below its 8 kB entry

        proc = subprocess.run([TROPICAL, "warm", "--arch", "sm_90", CHEAP], capture_output=True, text=True,
                              env=self.env, timeout=600, preexec_fn=small_file_limit)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(proc.stderr.count("tropical: warning:"), 1, proc.stderr)
        self.assertIn("File too large", proc.stderr)
        self.assertIn("1 compiled", proc.stdout)
        cache = self.env["TROPICAL_CACHE_DIR"]
        self.assertEqual([n for n in os.listdir(cache) if n.startswith(".tropical-tmp.")], [])

    def test_decision_log_explains_each_step(self):
        env = dict(self.env, TROPICAL_LOG="info")
        first = self.run_tropical("warm", "--arch", "sm_90", CHEAP, env=env).stderr
        self.assertIn(CHEAP + " sm_90: miss in local " + self.env["TROPICAL_CACHE_DIR"] + ": no entry", first)
        self.assertRegex(first, CHEAP + r" sm_90: compiled in [0-9.]+ ms")
        self.assertIn(CHEAP + " sm_90: stored in local", first)
        second = self.run_tropical("warm", "--arch", "sm_90", CHEAP, env=env).stderr
        self.assertIn(CHEAP + " sm_90: hit in local", second)
        self.assertEqual(self.run_tropical("warm", "--arch", "sm_90", CHEAP).stderr, "", "silent without TROPICAL_LOG")

    def test_bad_cache_size_warns_and_uses_the_default(self):
        env = dict(self.env, TROPICAL_CACHE_MAX_SIZE="lots")
        listing = self.run_tropical("list", env=env)
        self.assertEqual(listing.stderr.count("TROPICAL_CACHE_MAX_SIZE"), 1, listing.stderr)
        self.assertIn("'lots'", listing.stderr)
        self.assertIn(KERNEL, listing.stdout)
        self.assertIn("of 1073741824 allowed", self.run_tropical("stats", env=env).stdout)

    def test_warm_list_stats_clear_round_trip(self):
        self.assertIn("0 cached for sm_90", self.run_tropical("list", "--arch", "sm_90").stdout)
        out = self.run_tropical("warm", "--arch", "sm_90", KERNEL).stdout
        self.assertIn("1 compiled", out)
        listing = self.run_tropical("list", "--arch", "sm_90").stdout
        self.assertIn("1 cached for sm_90", listing)
        self.assertRegex(listing, KERNEL + r" .* cached")
        out = self.run_tropical("warm", "--arch", "sm_90", "--all").stdout
        lines = [l for l in out.splitlines() if l.split(" ")[0].count("/") == 1]
        self.assertGreater(len(lines), 1, "one plain progress line per kernel when not on a terminal")
        self.assertNotIn("\r", out)
        self.assertRegex(out, r"\d+ compiled, 1 already cached, 0 failed")
        again = self.run_tropical("warm", "--arch", "sm_90", "--all").stdout
        self.assertIn(" 0 compiled", again)
        stats = self.run_tropical("stats").stdout
        self.assertIn(self.env["TROPICAL_CACHE_DIR"], stats)
        self.assertRegex(stats, r"compiles [1-9]\d*")
        self.assertRegex(stats, KERNEL + r" +sm_90 \(\d+\)")
        cleared = self.run_tropical("clear").stdout
        self.assertRegex(cleared, r"removed [1-9]\d* entries")
        self.assertIn("0 cached for sm_90", self.run_tropical("list", "--arch", "sm_90").stdout)

    def test_progress_bar_on_a_terminal(self):
        script = shutil.which("script")
        if script is None:
            self.skipTest("script(1) is not installed: no pseudo-terminal to test with")
        proc = subprocess.run([script, "-qec", f"{TROPICAL} warm --arch sm_90 {KERNEL}", "/dev/null"],
                              capture_output=True, env=self.env, timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn(b"\r[", proc.stdout)  # bytes: text mode would turn \r into \n
        self.assertIn(b"1/1", proc.stdout)

    def test_compile_prints_the_time(self):
        out = self.run_tropical("compile", "--arch", "sm_80", KERNEL).stdout
        self.assertRegex(out, r"compiled tropical_gemm_maxplus_f32 for sm_80 in [\d.]+ ms: CUBIN \d+ bytes")

    def test_unwritable_cache_still_warms_with_one_warning(self):
        blocker = os.path.join(self.tmp, "file")
        with open(blocker, "w") as f:
            f.write("not a directory")
        env = dict(self.env, TROPICAL_CACHE_DIR=os.path.join(blocker, "cache"))
        proc = self.run_tropical("warm", "--arch", "sm_90", KERNEL, "tropical_gemm_minplus_f32", env=env)
        self.assertIn("2 compiled", proc.stdout)
        warnings = [l for l in proc.stderr.splitlines() if "warning" in l]
        self.assertEqual(len(warnings), 1, proc.stderr)

    def test_disabled_cache_compiles_every_time(self):
        env = dict(self.env, TROPICAL_CACHE_DISABLE="1")
        for _ in range(2):
            self.assertIn("1 compiled", self.run_tropical("warm", "--arch", "sm_90", KERNEL, env=env).stdout)
        self.assertIn("disabled", self.run_tropical("stats", env=env).stdout)

    def test_warm_without_nvrtc_says_so_once_and_exits_3(self):
        env = dict(self.env, TROPICAL_NVRTC=os.path.join(self.tmp, "no-such-libnvrtc.so"))
        proc = self.run_tropical("warm", "--arch", "sm_90", "--all", env=env, code=3)
        lines = [l for l in proc.stderr.splitlines() if "no-such-libnvrtc.so" in l]
        self.assertEqual(len(lines), 1, proc.stderr)

    def test_list_reads_no_entry_and_counts_nothing(self):
        self.run_tropical("warm", "--arch", "sm_90", KERNEL)
        before = self.run_tropical("stats").stdout.splitlines()[2:4]
        self.run_tropical("list", "--arch", "sm_90")
        self.assertEqual(self.run_tropical("stats").stdout.splitlines()[2:4], before)

    def test_gpu_commands_without_a_gpu_exit_3(self):
        if os.path.exists("/dev/nvidiactl"):
            self.skipTest("a GPU is present")
        self.assertIn("needs a GPU", self.run_tropical("gemm", "-m", "8", "-n", "8", "-k", "8", code=3).stderr)
        self.assertIn("needs a GPU", self.run_tropical("verify", code=3).stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
