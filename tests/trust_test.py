"""Trust end to end through the `tropical` command: hostile key files, config values, leases and planted
entries cost no hang, no lost setting and no forged code. Reuses fleet_test's fixture (a redis-server on a
unix socket in a temporary directory, one cache directory per "machine"); only the tests defined here run.

Usage: trust_test.py PATH_TO_TROPICAL PATH_TO_REDIS_SERVER
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_test  # noqa: E402  (reads the same command line)
from fleet_test import FORMAT, KERNEL, OTHER  # noqa: E402

# The entry format's checksum (src/storage/checksum.cpp): GMAC, AES-128 key and IV fixed by the format.
GMAC_KEY = b"tropical.entry.3".hex()
GMAC_IV = b"checksum.iv3".hex()


def gmac(data):
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        out = subprocess.run(["openssl", "mac", "-cipher", "AES-128-GCM", "-macopt", "hexkey:" + GMAC_KEY,
                              "-macopt", "hexiv:" + GMAC_IV, "-in", f.name, "GMAC"],
                             capture_output=True, text=True, check=True).stdout
    return bytes.fromhex(out.strip())


def forge(entry, other):
    """entry's key with other's CUBIN and PTX, checksummed: a sound entry a team member could plant."""
    key_size, _, _ = struct.unpack_from("<QQQ", entry, 16)
    key = entry[72:72 + key_size]
    o_key, o_cubin, o_ptx = struct.unpack_from("<QQQ", other, 16)
    cubin = other[72 + o_key:72 + o_key + o_cubin]
    ptx = other[72 + o_key + o_cubin:72 + o_key + o_cubin + o_ptx]
    head = entry[:16] + struct.pack("<QQQ", key_size, len(cubin), len(ptx)) + gmac(ptx)
    return head + gmac(head + key + cubin) + key + cubin + ptx


class TrustTest(fleet_test.FleetTest):
    def run_bounded(self, *args, env, timeout=20):
        """Runs tropical; a run past timeout (killed) fails the test instead of hanging it."""
        try:
            return subprocess.run([fleet_test.TROPICAL, *args], capture_output=True, text=True, env=env,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail("tropical %s did not return within %d s" % (" ".join(args), timeout))

    # (1) A FIFO at a key path: stats and a first use return at once, with one warning naming the file.
    def test_fifo_at_a_key_path_hangs_nothing(self):
        fifo = os.path.join(self.tmp, "trusted.pub.pem")
        os.mkfifo(fifo, 0o644)
        b = self.machine_env("b", trust=fifo, sign=fifo)
        proc = self.run_bounded("stats", env=b)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(fifo + ": a FIFO, not a regular file", proc.stderr)
        start = time.monotonic()
        proc = self.run_bounded("warm", "--arch", "sm_90", "-j", "1", KERNEL, env=b, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertLess(time.monotonic() - start, 30)

    # (3) Key files others can write, and a private key others can read, are refused with one warning each.
    def test_key_files_with_loose_modes_are_refused(self):
        a = self.machine_env("a", sign=self.private)
        self.warm(a, KERNEL)
        os.chmod(self.public, 0o666)
        b = self.machine_env("b", trust=self.public)
        compiled, proc = self.warm(b, KERNEL)
        self.assertEqual(compiled, 1, "an entry was read through a key anyone can replace")
        self.assertIn(self.public + ": mode 0666: writable by others", proc.stderr)
        os.chmod(self.public, 0o644)
        os.chmod(self.private, 0o644)
        self.redis()("FLUSHDB")
        c = self.machine_env("c", sign=self.private)
        compiled, proc = self.warm(c, KERNEL)
        self.assertIn("chmod 600", proc.stderr)
        self.assertEqual(self.remote_keys(), [], "published with a private key others can read")

    # (4) A value with a line break would add a setting (remote_unsigned = 1): refused, exit 2, file untouched.
    def test_config_refuses_control_characters_in_every_value(self):
        b = self.machine_env("b")
        del b["TROPICAL_REMOTE_CACHE"]
        self.run_tropical("config", "max_size", "1G", env=b)
        conf = os.path.join(b["TROPICAL_CACHE_DIR"], "tropical.conf")
        with open(conf) as f:
            before = f.read()
        for key, value in [("remote_trusted_keys", "/etc/k.pem\nremote_unsigned = 1"),
                           ("remote_signing_key", "/etc/k.pem\nremote_unsigned = 1"),
                           ("layers", "/opt/l\nremote = redis://evil:6379"),
                           ("remote", "redis://cache:6379\nremote_unsigned = 1"),
                           ("max_size", "1G\x1b[2J"),
                           ("remote_trusted_keys", "/etc/tropical/../../tmp/k.pem")]:
            proc = self.run_tropical("config", key, value, env=b, code=2)
            self.assertIn(key, proc.stderr)
            self.assertNotIn("\x1b", proc.stderr)
        with open(conf) as f:
            self.assertEqual(f.read(), before)

    # (9) 20 concurrent writers of 10 keys: every one exits 0 and every key survives.
    def test_concurrent_config_writers_lose_no_key(self):
        b = self.machine_env("b")
        del b["TROPICAL_REMOTE_CACHE"]
        values = {"max_size": "2G", "layers": "/opt/layer", "remote": "unix:///tmp/nowhere.sock",
                  "remote_connect_timeout": "300ms", "remote_cooldown": "30s", "remote_lease": "15s",
                  "remote_timeout": "2s", "remote_ttl": "7d", "remote_wait": "5s",
                  "remote_trusted_keys": "/etc/tropical/k.pem"}
        procs = [subprocess.Popen([fleet_test.TROPICAL, "config", key, value], env=b, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(2) for key, value in values.items()]
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, out + err)
        for key, value in values.items():
            self.assertEqual(self.run_tropical("config", key, env=b).stdout.strip(), value, key)

    # (5) A lease with no TTL, planted by anyone who can write the Redis, is ignored: no 10 s wait.
    def test_lease_without_a_ttl_stalls_no_producer(self):
        a = self.machine_env("a", sign=self.private)
        self.warm(a, KERNEL)
        (key,) = self.remote_keys()
        r = self.redis()
        r("FLUSHDB")
        lock = "tropical:lock:%d:%s" % (FORMAT, key.split(":")[-1])
        r("SET", lock, "planted")
        c = self.machine_env("c", sign=self.private, TROPICAL_REMOTE_WAIT="10s")
        start = time.monotonic()
        compiled, proc = self.warm(c, KERNEL)
        self.assertLess(time.monotonic() - start, 8, proc.stderr)
        self.assertEqual(compiled, 1)
        self.assertEqual(self.remote_keys(), [key], "the producer did not publish")
        self.assertIn("without a TTL", proc.stderr)

    # (6) An entry planted in a producer's cache (here: a team member's sound entry of KERNEL's key carrying
    # OTHER's CUBIN) is never signed and published: the producer publishes its own compile.
    def test_producer_publishes_only_what_it_compiled(self):
        if shutil.which("openssl") is None:
            self.skipTest("no openssl command to checksum a planted entry (apt-get install openssl)")
        t = self.machine_env("t")
        del t["TROPICAL_REMOTE_CACHE"]
        self.warm(t, KERNEL, OTHER)
        names = sorted(self.entries(t))
        by_kernel = {}
        for name, data in self.entries(t).items():
            by_kernel[KERNEL if KERNEL.encode() in data[72:400] else OTHER] = (name, data)
        self.assertEqual(len(by_kernel), 2, names)
        name, good = by_kernel[KERNEL]
        forged = forge(good, by_kernel[OTHER][1])
        p = self.machine_env("p", sign=self.private)
        os.makedirs(p["TROPICAL_CACHE_DIR"], mode=0o700)
        with open(os.open(os.path.join(p["TROPICAL_CACHE_DIR"], name), os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(forged)
        compiled, proc = self.warm(p, KERNEL)
        self.assertEqual(compiled, 0, "the planted entry is a sound entry: the producer's own runs use it")
        r = self.machine_env("r", trust=self.public)
        compiled, proc = self.warm(r, KERNEL)
        self.assertEqual(compiled, 0, proc.stdout + proc.stderr)
        self.assertTrue(self.entries(r) == {name: good}, "a fresh reader got the planted CUBIN from the fleet")

    # (11) What the command line gave is echoed without control characters; an arch is spelled as NVRTC spells
    # it; keygen does not write keys where others could replace them.
    def test_command_line_echoes_are_printable_and_names_strict(self):
        b = self.machine_env("b")
        del b["TROPICAL_REMOTE_CACHE"]
        proc = self.run_tropical("warm", "--arch", "sm_90", "evil\x1b]0;owned\x07", env=b, code=2)
        self.assertIn("evil", proc.stderr)
        self.assertNotIn("\x1b", proc.stderr)
        self.assertNotIn("\x07", proc.stderr)
        self.run_tropical("warm", "--arch", "sm_090", KERNEL, env=b, code=2)
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        proc = self.run_tropical("keygen", shared, env=b, code=1)
        self.assertIn("writable by others", proc.stderr)
        self.assertEqual(os.listdir(shared), [])


if __name__ == "__main__":
    suite = unittest.TestSuite(TrustTest(name) for name in sorted(vars(TrustTest)) if name.startswith("test_"))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)
