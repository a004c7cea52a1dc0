"""The `tropical` command without a GPU: every subcommand that needs none,
bad usage and the exit codes (0 ok, 1 failed, 2 bad usage, 3 unavailable),
the JSON outputs, and caches that are disabled, unusable or too small.

Kernels warmed here are backward kernels (tens of ms each to compile), so the
test stays quick on a small CI machine.

Usage: cli_test.py PATH_TO_TROPICAL
"""

import fcntl
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

TROPICAL = os.path.abspath(sys.argv[1])
# The libnvrtc the tool loads by default (tests/meson.build sets it); another NVRTC build is faked by the same
# library under another file name, which gives it another identity (file name and size).
NVRTC = os.environ.get("TROPICAL_TEST_NVRTC", "")
KERNEL = "tropical_backward_a_maxplus_f32"
OTHER = "tropical_backward_b_maxplus_f32"
CHEAP = KERNEL  # compiles in some 30 ms


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tropical-cli-")
        self.cache = os.path.join(self.tmp, "cache")
        # TMPDIR: a fallback cache directory, if any, lands in the test's directory.
        self.env = dict(os.environ, TROPICAL_CACHE_DIR=self.cache, TMPDIR=self.tmp)
        for name in ["TROPICAL_CACHE_DISABLE", "TROPICAL_CACHE_MAX_SIZE", "TROPICAL_NVRTC", "TROPICAL_CACHE_LAYERS",
                     "TROPICAL_LOG"]:
            self.env.pop(name, None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_tropical(self, *args, env=None, code=0):
        proc = subprocess.run([TROPICAL, *args], capture_output=True, text=True, env=env or self.env, timeout=600)
        self.assertEqual(proc.returncode, code, f"tropical {' '.join(args)}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def usage_error(self, *args):
        """Runs a bad command line: exit 2, one line on stderr, nothing on stdout; returns that line."""
        proc = self.run_tropical(*args, code=2)
        self.assertEqual(proc.stdout, "", args)
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
        return proc.stderr

    def entries(self):
        if not os.path.isdir(self.cache):
            return []
        return sorted(name for name in os.listdir(self.cache) if name.endswith(".entry"))

    def json_of(self, *args, env=None):
        """The command's stdout, checked by `python3 -m json.tool` and parsed."""
        out = self.run_tropical(*args, env=env).stdout
        subprocess.run([sys.executable, "-m", "json.tool"], input=out, text=True, check=True, capture_output=True)
        return json.loads(out)

    def test_help_lists_every_command_and_each_command_has_help(self):
        out = self.run_tropical("--help").stdout
        for command in ["list", "warm", "stats", "clear", "config", "compile", "gemm", "verify"]:
            self.assertIn(command, out)
            self.assertIn("usage: tropical " + command, self.run_tropical(command, "--help").stdout)

    def test_version_prints_one_line(self):
        out = self.run_tropical("--version").stdout
        self.assertRegex(out, r"^tropical \d+\.\d+\.\d+\n$")
        self.usage_error("--version", "extra")

    def test_bad_usage_exits_2_with_a_clear_message(self):
        self.assertIn("usage", self.run_tropical(code=2).stderr)
        self.assertIn("unknown command 'frobnicate'", self.usage_error("frobnicate"))
        self.assertIn("unknown option --bogus", self.usage_error("list", "--bogus"))
        self.assertIn("--all or kernel names", self.usage_error("warm"))
        self.assertIn("--all or kernel names", self.usage_error("warm", "--all", KERNEL))
        self.assertIn("no kernel named 'nope'", self.usage_error("warm", "nope"))
        self.assertIn("bad architecture 'sm_xx'", self.usage_error("warm", "--arch", "sm_xx", "--all"))
        self.assertIn("--arch needs a value", self.usage_error("list", "--arch"))
        self.assertIn("--all takes no value", self.usage_error("warm", "--all=yes"))
        self.assertIn("--arch is given twice", self.usage_error("list", "--arch", "sm_90", "--arch", "sm_80"))
        self.assertIn("unknown --semiring", self.usage_error("gemm", "--semiring", "plusmax"))
        self.assertIn("compile wants one kernel name", self.usage_error("compile"))
        self.assertIn("compile wants one kernel name", self.usage_error("compile", KERNEL, OTHER))
        self.assertIn("takes --json or --zero, not both", self.usage_error("stats", "--json", "--zero"))
        self.assertEqual(self.entries(), [], "bad usage changed the cache")

    def test_every_subcommand_rejects_stray_words(self):
        for command in ["list", "stats", "gemm", "verify"]:
            self.assertIn("unexpected argument 'stray'", self.usage_error(command, "stray"))
        self.assertIn("unknown option --stray", self.usage_error("clear", "--stray"))
        self.assertIn("unexpected argument 'stray'", self.usage_error("list", "--entries", "stray"))
        self.assertIn("unexpected argument 'stray'", self.usage_error("config", "max_size", "1G", "stray"))
        self.assertIn("wants one key", self.usage_error("config", "--unset", "max_size", "stray"))
        self.assertIn("unexpected argument 'stray'", self.usage_error("keygen", os.path.join(self.tmp, "k"), "stray"))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "k")), "bad usage wrote keys")
        self.assertIn("not both", self.usage_error("warm", "--all", "stray"))
        self.assertIn("one kernel name", self.usage_error("compile", KERNEL, "stray"))
        self.assertFalse(os.path.exists(os.path.join(self.cache, "tropical.conf")), "bad usage wrote settings")

    def test_numbers_are_parsed_strictly(self):
        for bad in ["4294967296", "18446744073709551617", "-1", "+2", "2x", " 2", "", "two", "0x10"]:
            self.assertIn("-j wants a non-negative integer", self.usage_error("warm", "-j", bad, "--all"))
        self.assertIn("-j wants a non-negative integer", self.usage_error("warm", "-j", "1025", "--all"))
        for flag in ["-m", "-n", "-k", "--repeat"]:
            self.assertIn(flag + " wants", self.usage_error("gemm", flag, "0"))
            self.assertIn(flag + " wants", self.usage_error("gemm", flag, "99999999999999999999"))
        self.assertEqual(self.entries(), [])

    def test_options_take_a_separate_or_attached_value(self):
        self.assertIn("0 cached for sm_80", self.run_tropical("list", "--arch=sm_80").stdout)
        self.assertIn("0 cached for sm_80", self.run_tropical("list", "--arch", "80").stdout)
        out = self.run_tropical("warm", "--arch=sm_90", "-j1", KERNEL).stdout
        self.assertIn("1 thread,", out)
        out = self.run_tropical("warm", "--arch", "sm_90", "-j", "2", "--", OTHER).stdout
        self.assertIn("1 compiled", out)

    def test_arch_that_nvrtc_cannot_compile_for_is_one_line_and_exit_2(self):
        for args in [("warm", "--arch", "sm_50", "--all"), ("warm", "--arch=sm_50", KERNEL),
                     ("compile", "--arch", "sm_50", KERNEL), ("list", "--arch", "sm_50")]:
            line = self.usage_error(*args)
            self.assertIn("sm_50", line)
            self.assertIn("sm_90", line, "the message names the archs NVRTC does compile for")
        self.assertEqual(self.entries(), [])

    def test_file_size_limit_is_one_warning_not_a_signal(self):
        # (ulimit -f 50; tropical warm ...) used to die of SIGXFSZ (exit 153). Nothing is masked here.
        import resource

        def small_file_limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # ulimit -f 4: below its 8 kB entry

        proc = subprocess.run([TROPICAL, "warm", "--arch", "sm_90", CHEAP], capture_output=True, text=True,
                              env=self.env, timeout=600, preexec_fn=small_file_limit)
        # Exit 1, not a signal: warm says the entry it compiled could not be kept.
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(proc.stderr.count("tropical: warning:"), 1, proc.stderr)
        self.assertIn("File too large", proc.stderr)
        self.assertIn("not stored", proc.stderr)
        self.assertIn("storing failed", proc.stderr)
        self.assertIn("1 compiled", proc.stdout)
        self.assertIn("1 not stored", proc.stdout)
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
        quiet = self.run_tropical("warm", "--arch", "sm_90", CHEAP).stderr
        self.assertNotIn(" sm_90: hit in", quiet, "no decision lines without TROPICAL_LOG")
        self.assertNotIn(" sm_90: miss", quiet, "no decision lines without TROPICAL_LOG")
        self.assertNotIn("tropical: warning", quiet)
        self.assertNotIn("tropical: info", quiet, "silent without TROPICAL_LOG (progress lines aside)")

    def test_bad_cache_size_warns_and_uses_the_default(self):
        env = dict(self.env, TROPICAL_CACHE_MAX_SIZE="lots")
        listing = self.run_tropical("list", env=env)
        self.assertEqual(listing.stderr.count("TROPICAL_CACHE_MAX_SIZE"), 1, listing.stderr)
        self.assertIn("'lots'", listing.stderr)
        self.assertIn(KERNEL, listing.stdout)
        self.assertIn("of 1073741824 allowed", self.run_tropical("stats", env=env).stdout)

    def test_warm_list_stats_clear_round_trip(self):
        self.assertIn("0 cached for sm_90", self.run_tropical("list", "--arch", "sm_90").stdout)
        proc = self.run_tropical("warm", "--arch", "sm_90", KERNEL)
        self.assertRegex(proc.stdout, r"^warm sm_90: 1 kernel, 1 compiled, 0 already cached, 0 failed, 0 not stored")
        listing = self.run_tropical("list", "--arch", "sm_90").stdout
        self.assertIn("1 cached for sm_90", listing)
        self.assertRegex(listing, KERNEL + r" .* cached")
        proc = self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER)
        self.assertRegex(proc.stdout, r"1 compiled, 1 already cached, 0 failed, 0 not stored")
        self.assertEqual(len(proc.stdout.splitlines()), 1, "only the summary on stdout")
        self.assertIn(" 0 compiled", self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER).stdout)
        stats = self.run_tropical("stats").stdout
        self.assertIn(self.cache, stats)
        self.assertRegex(stats, r"compiles [1-9]\d*")
        self.assertRegex(stats, KERNEL + r" +sm_90 \(\d+\)")
        cleared = self.run_tropical("clear").stdout
        self.assertRegex(cleared, r"removed 2 entries")
        self.assertIn("0 cached for sm_90", self.run_tropical("list", "--arch", "sm_90").stdout)

    def test_progress_goes_to_stderr_one_line_per_kernel_when_piped(self):
        proc = self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER)
        progress = [l for l in proc.stderr.splitlines() if l.split(" ")[0].count("/") == 1]
        self.assertEqual(len(progress), 2, proc.stderr)
        self.assertNotIn("\r", proc.stderr)
        self.assertNotIn("/2 ", proc.stdout)

    def test_progress_bar_on_a_terminal(self):
        script = shutil.which("script")
        if script is None:
            self.skipTest("script(1) is not installed: no pseudo-terminal to test with")
        proc = subprocess.run([script, "-qec", f"{TROPICAL} warm --arch sm_90 {KERNEL}", "/dev/null"],
                              capture_output=True, env=self.env, timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn(b"\r[", proc.stdout)  # bytes: text mode would turn \r into \n
        self.assertIn(b"1/1", proc.stdout)

    def test_clear_names_removes_only_those_kernels_for_every_arch(self):
        self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER)
        self.run_tropical("warm", "--arch", "sm_80", KERNEL)
        self.assertEqual(len(self.entries()), 3)
        before = self.entries()
        self.assertIn("no kernel named 'nope'", self.usage_error("clear", KERNEL, "nope"))
        self.assertEqual(self.entries(), before, "an unknown name must remove nothing")
        out = self.run_tropical("clear", KERNEL).stdout
        self.assertIn("removed 2 entries of 1 kernel", out)
        self.assertIn("0 cached for sm_80", self.run_tropical("list", "--arch", "sm_80").stdout)
        listing = self.run_tropical("list", "--arch", "sm_90").stdout
        self.assertIn("1 cached for sm_90", listing)
        self.assertRegex(listing, OTHER + r" .* cached")
        self.assertEqual(len(self.entries()), 1)

    def test_stats_json_and_zero(self):
        self.run_tropical("warm", "--arch", "sm_90", KERNEL)
        stats = self.json_of("stats", "--json")
        self.assertEqual(stats["schema"], 1)
        self.assertEqual(stats["cache"]["dir"], self.cache)
        self.assertIs(stats["cache"]["enabled"], True)
        self.assertEqual(stats["cache"]["entries"], 1)
        self.assertEqual(stats["cache"]["max_bytes"], 1 << 30)
        for field in ["hits", "misses", "compiles", "evictions", "errors", "bytes_written", "bytes_read",
                      "compile_ns", "load_ns"]:
            self.assertIsInstance(stats["machine"][field], int, field)
        self.assertEqual(stats["machine"]["compiles"], 1)
        self.assertEqual([k["name"] for k in stats["kernels"]], [KERNEL])
        self.assertEqual(stats["kernels"][0]["entries"][0]["arch"], 90)
        self.assertGreater(stats["kernels"][0]["entries"][0]["bytes"], 0)

        self.assertIn("statistics zeroed", self.run_tropical("stats", "--zero").stdout)
        zeroed = self.json_of("stats", "--json")
        self.assertEqual(zeroed["machine"], {field: 0 for field in stats["machine"]})
        self.assertEqual(zeroed["cache"]["entries"], 1, "zeroing keeps the entries")

    def other_nvrtc(self):
        """An environment whose NVRTC identity differs from the default one: the same library by another name."""
        if not os.path.isfile(NVRTC):
            self.skipTest("TROPICAL_TEST_NVRTC does not name the toolkit's libnvrtc")
        other = os.path.join(self.tmp, "libnvrtc-other.so.13")
        try:
            os.link(NVRTC, other)
        except OSError:
            shutil.copyfile(NVRTC, other)
        return dict(self.env, TROPICAL_NVRTC=other), "libnvrtc-other.so.13:" + str(os.path.getsize(NVRTC))

    @staticmethod
    def default_nvrtc():
        """The identity of the default NVRTC: the name of the file it resolves to, and its size."""
        return os.path.basename(os.path.realpath(NVRTC)) + ":" + str(os.path.getsize(NVRTC))

    def write_fake_entry(self, name, kernel, version=3, nvrtc="libnvrtc.so.13:1"):
        """A file that starts like an entry of format version (1 or 3) whose key names kernel, sm_90, nvrtc and a
        source digest of zeros, with no image: the library made none like it, but its header says which kernel
        it is for."""
        def field(b):
            return struct.pack("<Q", len(b)) + b
        key = (field(b"tropical.jit.CacheKey") + struct.pack("<I", version) + field(kernel.encode())
               + field(b"0" * 64) + struct.pack("<Q", 0) + struct.pack("<q", 90) + field(nvrtc.encode()))
        header = b"TROPJIT\n" + struct.pack("<IIQQQ", version, 0, len(key), 0, 0) + bytes(32)
        path = os.path.join(self.cache, name)
        with open(path, "wb") as f:
            f.write(header + key)
        os.chmod(path, 0o600)
        return path

    def test_list_shows_entries_of_another_nvrtc_build(self):
        other, identity = self.other_nvrtc()
        self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER, env=other)
        self.run_tropical("warm", "--arch", "sm_80", KERNEL, env=other)
        self.run_tropical("warm", "--arch", "sm_90", KERNEL)
        self.assertEqual(len(self.entries()), 4)

        listing = self.run_tropical("list", "--arch", "sm_90").stdout
        self.assertRegex(listing, KERNEL + r" .* cached\n")
        self.assertRegex(listing, OTHER + r" .* other NVRTC\n")
        self.assertIn("1 cached for sm_90", listing)
        self.assertIn("3 of 4 entries are not used by this process", listing)
        self.assertIn("3 entries (sm_80, sm_90) of another NVRTC build: " + identity, listing)
        # Seen from the other build, the roles swap.
        from_other = self.run_tropical("list", "--arch", "sm_90", env=other).stdout
        self.assertIn("2 cached for sm_90", from_other)
        self.assertIn("1 entry (sm_90) of another NVRTC build", from_other)

        every = self.run_tropical("list", "--entries").stdout.splitlines()
        rows = [l for l in every if l.startswith("  tropical_")]
        self.assertEqual(len(rows), 4, every)
        self.assertEqual(sum(l.endswith("  usable") for l in rows), 1, every)
        self.assertEqual(sum(l.endswith("other NVRTC: " + identity) for l in rows), 3, every)
        self.assertIn("4 entries", every[-1])
        self.assertIn("1 usable by this process", every[-1])
        self.assertIn("takes --json or --entries", self.usage_error("list", "--json", "--entries"))

        listing = self.json_of("list", "--json", "--arch", "sm_90")
        self.assertEqual((listing["entries"], listing["unusable"], listing["cached"]), (4, 3, 1))
        self.assertEqual(listing["nvrtc"], self.default_nvrtc())
        by_name = {k["name"]: k for k in listing["kernels"]}
        mine = by_name[KERNEL]["entries"]
        self.assertEqual(sorted((e["arch"], e["usable"], e["mismatch"], e["nvrtc"]) for e in mine),
                         [(80, False, "nvrtc", identity), (90, False, "nvrtc", identity),
                          (90, True, None, listing["nvrtc"])])
        self.assertEqual(sorted(e["file"] for k in listing["kernels"] for e in k["entries"]), self.entries())
        for e in mine:
            self.assertEqual(e["tier"], "tuned")
            self.assertEqual(e["bytes"], os.path.getsize(os.path.join(self.cache, e["file"])))
        self.assertIs(by_name[OTHER]["cached"], False)
        self.assertEqual([e["mismatch"] for e in by_name[OTHER]["entries"]], ["nvrtc"])
        self.assertEqual(listing["other_entries"], [])

        stats = self.json_of("stats", "--json")
        self.assertEqual((stats["cache"]["entries"], stats["cache"]["unusable"]), (4, 3))
        self.assertEqual([(k["name"], [e["arch"] for e in k["entries"]]) for k in stats["kernels"]], [(KERNEL, [90])])
        text = self.run_tropical("stats").stdout
        self.assertIn("3 of them not used by this process", text)
        self.assertIn("of another NVRTC build: " + identity, text)

    def test_list_names_entries_of_another_format_or_source(self):
        if not os.path.isfile(NVRTC):
            self.skipTest("TROPICAL_TEST_NVRTC does not name the toolkit's libnvrtc")
        self.run_tropical("warm", "--arch", "sm_90", OTHER)
        self.write_fake_entry("a" * 64 + ".entry", KERNEL, version=1, nvrtc=self.default_nvrtc())
        self.write_fake_entry("b" * 64 + ".entry", KERNEL, version=3, nvrtc=self.default_nvrtc())
        listing = self.json_of("list", "--json", "--arch", "sm_90")
        mine = {e["file"]: e for k in listing["kernels"] if k["name"] == KERNEL for e in k["entries"]}
        self.assertEqual({f: e["mismatch"] for f, e in mine.items()},
                         {"a" * 64 + ".entry": "format", "b" * 64 + ".entry": "source"})
        self.assertEqual((listing["entries"], listing["unusable"], listing["cached"]), (3, 2, 1))
        text = self.run_tropical("list", "--arch", "sm_90").stdout
        self.assertRegex(text, KERNEL + r" .* other format\n")
        self.assertIn("2 entries (sm_90) of another format, source or options", text)
        self.assertIn("removed 2 entries of 1 kernel", self.run_tropical("clear", KERNEL).stdout)
        self.assertEqual(len(self.entries()), 1)

    def test_debug_log_explains_a_miss_caused_by_another_nvrtc_in_one_line(self):
        other, identity = self.other_nvrtc()
        self.run_tropical("warm", "--arch", "sm_90", KERNEL, env=other)
        err = self.run_tropical("warm", "--arch", "sm_90", KERNEL, env=dict(self.env, TROPICAL_LOG="debug")).stderr
        misses = [l for l in err.splitlines() if KERNEL + " sm_90: miss in " in l]
        self.assertEqual(len(misses), 1, err)
        self.assertTrue(misses[0].startswith("tropical: "), misses[0])
        self.assertIn("entry for another NVRTC identity", misses[0])
        self.assertIn(identity, misses[0])
        self.assertIn("this process: " + self.default_nvrtc(), misses[0])

    def test_clear_names_removes_their_entries_of_every_nvrtc_build_and_nothing_else(self):
        other, identity = self.other_nvrtc()
        self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER, env=other)
        self.run_tropical("warm", "--arch", "sm_80", KERNEL, env=other)
        self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER)
        # Files named like entries that the library cannot vouch for, or of a kernel not in this catalog.
        foreign = os.path.join(self.cache, "f" * 64 + ".entry")
        with open(foreign, "wb") as f:
            f.write(b"not an entry, but named like one " + KERNEL.encode())
        os.chmod(foreign, 0o600)
        fake = self.write_fake_entry("e" * 64 + ".entry", "tropical_not_in_this_catalog")
        self.assertEqual(len(self.entries()), 7)

        listing = self.json_of("list", "--json")
        self.assertEqual(sorted((e["file"], e["kernel"]) for e in listing["other_entries"]),
                         [("e" * 64 + ".entry", "tropical_not_in_this_catalog"), ("f" * 64 + ".entry", None)])
        text = self.run_tropical("list").stdout
        self.assertIn("1 entry of kernels not in this catalog", text)
        self.assertIn("1 entry whose header this version cannot read", text)

        out = self.run_tropical("clear", KERNEL).stdout
        self.assertIn("removed 3 entries of 1 kernel", out)
        left = self.json_of("list", "--json")
        self.assertEqual([k["name"] for k in left["kernels"] if k["entries"]], [OTHER])
        self.assertEqual(sorted(e["nvrtc"] for e in left["kernels"][[k["name"] for k in left["kernels"]].index(OTHER)]
                                ["entries"]), sorted([identity, left["nvrtc"]]))
        self.assertTrue(os.path.exists(foreign), "a file whose header is not an entry's stays")
        self.assertTrue(os.path.exists(fake), "an entry of another kernel stays")
        self.assertIn("removed 2 entries of 1 kernel", self.run_tropical("clear", OTHER, env=other).stdout)
        self.assertEqual(sorted(self.entries()), sorted([os.path.basename(foreign), os.path.basename(fake)]))

    def test_list_json(self):
        self.run_tropical("warm", "--arch", "sm_90", KERNEL)
        listing = self.json_of("list", "--json", "--arch", "sm_90")
        self.assertEqual(listing["schema"], 1)
        self.assertEqual(listing["arch"], 90)
        self.assertEqual(listing["cache_dir"], self.cache)
        self.assertEqual(listing["cached"], 1)
        self.assertEqual([k["id"] for k in listing["kernels"]], list(range(len(listing["kernels"]))))
        self.assertEqual((listing["entries"], listing["unusable"], listing["other_entries"]), (1, 0, []))
        self.assertIsInstance(listing["nvrtc"], str)
        mine = [k for k in listing["kernels"] if k["name"] == KERNEL]
        [file] = self.entries()
        self.assertEqual(mine, [{"id": mine[0]["id"], "name": KERNEL, "op": "backward_a", "semiring": "maxplus",
                                 "type": "f32", "cached": True,
                                 "entries": [{"file": file, "arch": 90, "tier": "tuned",
                                              "bytes": os.path.getsize(os.path.join(self.cache, file)),
                                              "nvrtc": listing["nvrtc"], "usable": True, "mismatch": None}]}])
        self.assertEqual(sum(k["cached"] for k in listing["kernels"]), 1)
        self.assertEqual(sum(len(k["entries"]) for k in listing["kernels"]), 1)

    def test_write_errors_on_stdout_exit_1(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        for args in [["list"], ["list", "--json"], ["list", "--entries"], ["stats"], ["stats", "--json"], ["--help"], ["--version"]]:
            with open("/dev/full", "w") as full:
                proc = subprocess.run([TROPICAL, *args], stdout=full, stderr=subprocess.PIPE, text=True,
                                      env=self.env, timeout=60)
            self.assertEqual(proc.returncode, 1, args)
            self.assertIn("cannot write to standard output", proc.stderr)

    def test_compile_prints_the_time(self):
        out = self.run_tropical("compile", "--arch", "sm_80", KERNEL).stdout
        self.assertRegex(out, KERNEL + r" for sm_80 in [\d.]+ ms: CUBIN \d+ bytes")

    def test_unwritable_cache_still_compiles_with_one_warning_and_warm_exits_1(self):
        blocker = os.path.join(self.tmp, "file")
        with open(blocker, "w") as f:
            f.write("not a directory")
        # The fallback directory ($TMPDIR/tropical-<uid>) cannot be created either: memory only.
        env = dict(self.env, TROPICAL_CACHE_DIR=os.path.join(blocker, "cache"), TMPDIR=blocker)
        proc = self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER, env=env, code=1)
        self.assertIn("2 compiled", proc.stdout)
        self.assertIn("2 not stored", proc.stdout)
        self.assertIn("unusable", proc.stderr)
        self.assertIn("memory only", proc.stderr)
        warnings = [l for l in proc.stderr.splitlines() if "warning" in l]
        self.assertEqual(len(warnings), 1, proc.stderr)

    def test_disabled_cache_compiles_every_time_and_warm_exits_1(self):
        env = dict(self.env, TROPICAL_CACHE_DISABLE="1")
        for _ in range(2):
            proc = self.run_tropical("warm", "--arch", "sm_90", KERNEL, env=env, code=1)
            self.assertIn("1 compiled", proc.stdout)
            self.assertIn("not stored", proc.stderr)
            self.assertIn("disabled", proc.stderr)
        self.assertIn("disabled", self.run_tropical("stats", env=env).stdout)

    def test_cache_too_small_to_keep_what_warm_compiled_exits_1(self):
        env = dict(self.env, TROPICAL_CACHE_MAX_SIZE="100")
        proc = self.run_tropical("warm", "--arch", "sm_90", KERNEL, OTHER, env=env, code=1)
        self.assertIn("2 compiled", proc.stdout)
        self.assertRegex(proc.stdout, r"[12] not stored")
        self.assertIn("too small", proc.stderr)
        # This run's own stores evicted them: said as such, and nothing is blamed on another process.
        self.assertNotIn("another process", proc.stderr)

    def digest_of(self, kernel):
        """The entry file name of kernel for sm_90 (a warm into a scratch cache), which names its lock stripe."""
        scratch = dict(self.env, TROPICAL_CACHE_DIR=os.path.join(self.tmp, "scratch-" + kernel))
        self.run_tropical("warm", "--arch", "sm_90", kernel, env=scratch)
        (name,) = [n for n in os.listdir(scratch["TROPICAL_CACHE_DIR"]) if n.endswith(".entry")]
        return name

    def test_warm_tells_entries_removed_by_another_process_from_a_cache_too_small(self):
        # Reproduced in order: warm (-j 1) stores FIRST, and its eviction removes an old
        # entry to stay under the limit; while it waits for SECOND's lock stripe (held here), `tropical clear
        # FIRST` runs; then warm stores SECOND. FIRST is missing and this run did evict, but not FIRST: the
        # cache (2 MiB) holds both kernels, so "too small" would be wrong.
        first = KERNEL
        stripe = lambda digest: digest[:2]
        first_stripe = stripe(self.digest_of(first))
        candidates = [OTHER, "tropical_backward_a_minplus_f32", "tropical_backward_b_minplus_f32",
                      "tropical_backward_a_maxplus_f64"]
        second, second_digest = next((k, d) for k, d in ((k, self.digest_of(k)) for k in candidates)
                                     if stripe(d) != first_stripe)
        # The second kernel's lock stripe file, made by a warm of it (whose entry goes again).
        self.run_tropical("warm", "--arch", "sm_90", second)
        self.run_tropical("clear", second)
        old = os.path.join(self.cache, "f" * 64 + ".entry")  # an old entry of 4 MiB: evicted by the first store
        with open(old, "wb") as f:
            f.write(bytes(4 << 20))
        os.chmod(old, 0o600)
        os.utime(old, (946684800, 946684800))
        env = dict(self.env, TROPICAL_CACHE_MAX_SIZE=str(2 << 20), TROPICAL_LOCK_TIMEOUT="120s")
        lock = os.open(os.path.join(self.cache, "locks", "tropical-%s.lock" % stripe(second_digest)), os.O_RDWR)
        try:
            fcntl.lockf(lock, fcntl.LOCK_EX)
            warm = subprocess.Popen([TROPICAL, "warm", "--arch", "sm_90", "-j", "1", first, second], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            watchdog = threading.Timer(300, warm.kill)
            watchdog.start()
            seen = []
            while not any(line.startswith("1/2 " + first) for line in seen):
                line = warm.stderr.readline()
                self.assertTrue(line, "warm ended before storing %s: %s" % (first, "".join(seen)))
                seen.append(line)
            self.assertFalse(os.path.exists(old), "the first store evicted the old entry")
            self.run_tropical("clear", first, env=env)  # another process removes what warm stored
        finally:
            os.close(lock)  # releases the stripe: warm stores the second kernel
        out, err = warm.communicate()
        watchdog.cancel()
        err = "".join(seen) + err
        self.assertEqual(warm.returncode, 1, out + err)
        self.assertIn("1 not stored", out)
        self.assertEqual(self.entries(), [second_digest])
        self.assertIn("1 of 2 kernels for sm_90 is not stored in %s: removed by another process" % self.cache, err)
        self.assertNotIn("too small", err)

    def test_warm_without_nvrtc_says_so_once_and_exits_3(self):
        env = dict(self.env, TROPICAL_NVRTC=os.path.join(self.tmp, "no-such-libnvrtc.so"))
        proc = self.run_tropical("warm", "--arch", "sm_90", "--all", env=env, code=3)
        lines = [l for l in proc.stderr.splitlines() if "no-such-libnvrtc.so" in l]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.run_tropical("compile", "--arch", "sm_90", KERNEL, env=env, code=3)
        # Listing needs no NVRTC: the arch is then checked for its form only.
        self.assertIn("0 cached for sm_90", self.run_tropical("list", "--arch", "sm_90", env=env).stdout)

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

    def test_gemm_on_the_cpu_needs_no_gpu_and_checks_its_rows(self):
        out = self.run_tropical("gemm", "--device", "cpu", "-m", "70", "-n", "33", "-k", "129", "--repeat", "2",
                                "--threads", "2", "--type", "i32", "--semiring", "minplus").stdout
        self.assertIn("minplus i32 70x33x129 on the CPU", out)
        self.assertIn("2 threads", out)
        self.assertIn("check       ok (64 rows vs CPU reference, 0 mismatches)", out)
        self.assertIn("unknown --device", self.usage_error("gemm", "--device", "tpu"))
        self.assertIn("--device cpu only", self.usage_error("gemm", "--threads", "2"))

    # Small things a newcomer trips on.
    def test_a_mistyped_command_gets_a_suggestion(self):
        self.assertIn("did you mean 'list'?", self.usage_error("lsit"))
        self.assertIn("did you mean 'warm'?", self.usage_error("wram"))
        self.assertNotIn("did you mean", self.usage_error("frobnicate"))

    def test_warm_with_the_cache_disabled_counts_what_this_run_stored_not_what_is_on_disk(self):
        self.run_tropical("warm", "--arch", "sm_90", KERNEL)
        self.assertEqual(len(self.entries()), 1)
        proc = self.run_tropical("warm", "--arch", "sm_90", KERNEL, env=dict(self.env, TROPICAL_CACHE_DISABLE="1"),
                                 code=1)
        self.assertIn("1 kernel, 1 compiled, 0 already cached, 0 failed, 1 not stored", proc.stdout)
        self.assertIn("1 of 1 kernel for sm_90 is not stored", proc.stderr)
        self.assertIn("TROPICAL_CACHE_DISABLE", proc.stderr)

    def test_list_columns_fit_the_longest_names(self):
        lines = self.run_tropical("list", "--arch", "sm_90").stdout.splitlines()
        header, rows = lines[0], [line for line in lines[1:] if line[5:].startswith("tropical_")]
        self.assertEqual(len(rows), len(json.loads(self.run_tropical("list", "--json").stdout)["kernels"]))
        for column in ("op", "semiring", "type"):
            start = header.index(" " + column + " ") + 1
            for row in rows:
                self.assertNotEqual(row[start - 1], "_", f"a name runs into the {column} column: {row}")
                self.assertEqual(row[start - 1], " ", row)
                self.assertNotEqual(row[start], " ", f"{column} column misaligned: {row}")

    def test_numbers_out_of_range_name_the_range_in_words_that_fit(self):
        self.assertIn("-m wants an integer from 1 to", self.usage_error("gemm", "-m", "0"))
        self.assertIn("-j wants a non-negative integer up to 1024", self.usage_error("warm", "-j", "x", "--all"))

    # What a new user typed: values after '=' on short options, a negative value that is no option, the
    # global --cache-dir before the command, a product too large for the host's memory, and singulars.
    def test_short_options_take_an_attached_value_after_equals_too(self):
        out = self.run_tropical("gemm", "--device=cpu", "-m=8", "-n=4", "-k=2", "--repeat=1").stdout
        self.assertIn("maxplus f32 8x4x2 on the CPU", out)
        self.assertIn("-m wants an integer from 1 to", self.usage_error("gemm", "--device", "cpu", "-m=x"))

    def test_a_negative_value_is_a_bad_value_not_an_unknown_option(self):
        line = self.usage_error("config", "max_size", "-5")
        self.assertIn("max_size wants a size", line)
        self.assertNotIn("unknown option", line)
        self.assertIn("-m wants an integer from 1 to", self.usage_error("gemm", "-m", "-5"))
        self.assertFalse(os.path.exists(os.path.join(self.cache, "tropical.conf")), "bad usage wrote settings")

    def test_cache_dir_before_the_command_name(self):
        other = os.path.join(self.tmp, "other")
        self.run_tropical("--cache-dir", other, "config", "max_size", "1G")
        self.assertTrue(os.path.exists(os.path.join(other, "tropical.conf")))
        self.assertIn("1G", self.run_tropical("--cache-dir=" + other, "config", "max_size").stdout)
        self.assertIn("is given twice", self.usage_error("--cache-dir", other, "stats", "--cache-dir", other))
        self.assertIn("--cache-dir needs a value", self.usage_error("--cache-dir"))
        self.assertIn("usage", self.run_tropical("--cache-dir", other, code=2).stderr)
        self.assertFalse(os.path.exists(os.path.join(self.cache, "tropical.conf")))

    def test_one_thread_is_singular(self):
        out = self.run_tropical("gemm", "--device", "cpu", "-m", "4", "-n", "4", "-k", "4", "--repeat", "1",
                                "--threads", "1").stdout
        self.assertIn("1 thread)", out)
        self.assertNotIn("1 threads", out)

    def test_a_product_too_large_for_host_memory_is_one_sentence_and_exit_1(self):
        import resource

        def limit_memory():
            resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

        proc = subprocess.run([TROPICAL, "gemm", "--device", "cpu", "-m", "100000", "-n", "100000", "-k", "1"],
                              capture_output=True, text=True, env=self.env, timeout=600, preexec_fn=limit_memory)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
        self.assertIn("100000x100000x1", proc.stderr)
        self.assertIn("40.0 GB of host memory", proc.stderr)
        self.assertNotIn("bad_alloc", proc.stderr)

    def test_a_cpu_isa_this_cpu_lacks_warns_once_and_uses_the_best_it_has(self):
        gemm = ("gemm", "--device", "cpu", "-m", "4", "-n", "4", "-k", "4", "--repeat", "1")
        best = re.search(r"on the CPU \((\w+),", self.run_tropical(*gemm).stdout).group(1)
        lacking = "neon" if platform.machine() in ("x86_64", "AMD64", "i386", "i686") else "avx2"
        proc = self.run_tropical(*gemm, env=dict(self.env, TROPICAL_CPU_ISA=lacking))
        self.assertIn(f"on the CPU ({best},", proc.stdout)
        self.assertEqual(proc.stderr.count("TROPICAL_CPU_ISA"), 1, proc.stderr)
        self.assertIn(f"TROPICAL_CPU_ISA={lacking} names an instruction set this CPU lacks", proc.stderr)
        self.assertIn(f"using the best it has ({best})", proc.stderr)

    def test_escape_bytes_in_a_cache_path_do_not_reach_the_terminal(self):
        cache = os.path.join(self.tmp, "ca\x1b[31mche\x07")
        for args in [("stats",), ("stats", "--zero"), ("clear",), ("config", "max_size", "1G"), ("list", "--arch", "sm_90")]:
            proc = self.run_tropical("--cache-dir", cache, *args)
            for stream in (proc.stdout, proc.stderr):
                self.assertNotIn("\x1b", stream, args)
                self.assertNotIn("\x07", stream, args)
        self.assertIn("ca?[31mche?", self.run_tropical("--cache-dir", cache, "stats").stdout)
        # JSON keeps the name exact, escaped the JSON way.
        self.assertEqual(self.json_of("--cache-dir", cache, "stats", "--json")["cache"]["dir"], cache)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
