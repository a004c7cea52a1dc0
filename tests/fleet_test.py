"""The fleet's acceptance tests, end to end through the `tropical` command: each "machine" is its own
primary cache directory, the fleet cache a real redis-server started here on a unix socket in a temporary
directory (no TCP port), stopped at the end. Only backward kernels (some 30 ms to compile each).

Usage: fleet_test.py PATH_TO_TROPICAL PATH_TO_REDIS_SERVER
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

TROPICAL = os.path.abspath(sys.argv[1])
REDIS_SERVER = sys.argv[2] if len(sys.argv) > 2 else ""
KERNEL = "tropical_backward_a_maxplus_f32"
OTHER = "tropical_backward_b_maxplus_f32"
FORMAT = 3  # kCacheFormatVersion: part of every Redis key


class Redis:
    """A minimal RESP client over the unix socket, for planting and inspecting values."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(path)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError("bad reply " + repr(line))

    def __call__(self, *args):
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        out = b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
        self.sock.sendall(out)
        return self._reply()


class FleetTest(unittest.TestCase):
    def setUp(self):
        if not REDIS_SERVER:
            self.skipTest("redis-server not found (apt-get install redis-server)")
        self.tmp = tempfile.mkdtemp(prefix="tropical-fleet-")
        self.sock = os.path.join(self.tmp, "redis.sock")
        self.server = None
        self.start_server()
        self.keys = os.path.join(self.tmp, "keys")
        self.run_tropical("keygen", self.keys, env=self.machine_env("keygen"))
        self.private = os.path.join(self.keys, "tropical-remote-signing.pem")
        self.public = os.path.join(self.keys, "tropical-remote-signing.pub.pem")

    def tearDown(self):
        if self.server is not None and self.server.poll() is None:
            os.kill(self.server.pid, signal.SIGCONT)
            self.server.kill()
            self.server.wait(timeout=10)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start_server(self):
        self.server = subprocess.Popen(
            [REDIS_SERVER, "--port", "0", "--unixsocket", self.sock, "--unixsocketperm", "700", "--save", "",
             "--appendonly", "no", "--dir", self.tmp, "--databases", "4"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                r = Redis(self.sock)
                r("PING")
                r.close()
                return
            except OSError:
                time.sleep(0.02)
        self.fail("redis-server did not start")

    def redis(self, db=0):
        r = Redis(self.sock)
        r("SELECT", db)
        self.addCleanup(r.close)
        return r

    def machine_env(self, name, db=0, sign=None, trust=None, unsigned=False, url=None, **extra):
        """The environment of "machine" name: its own primary directory, the remote, its keys."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("TROPICAL_")}
        env["TROPICAL_CACHE_DIR"] = os.path.join(self.tmp, "machine-" + name)
        env["TROPICAL_REMOTE_CACHE"] = url or "unix://%s?db=%d" % (self.sock, db)
        if sign:
            env["TROPICAL_REMOTE_SIGNING_KEY"] = sign
        if trust:
            env["TROPICAL_REMOTE_TRUSTED_KEYS"] = trust
        if unsigned:
            env["TROPICAL_REMOTE_UNSIGNED"] = "1"
        env.update(extra)
        return env

    def run_tropical(self, *args, env, code=0):
        proc = subprocess.run([TROPICAL, *args], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(proc.returncode, code, f"tropical {' '.join(args)}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def warm(self, env, *kernels):
        """Runs `tropical warm` of kernels (default KERNEL) on one thread; returns (compiled, proc)."""
        proc = self.run_tropical("warm", "--arch", "sm_90", "-j", "1", *(kernels or (KERNEL,)), env=env)
        summary = [line for line in proc.stdout.splitlines() if line.startswith("warm sm_90:")]
        self.assertEqual(len(summary), 1, proc.stdout)
        return int(summary[0].split(", ")[1].split()[0]), proc

    def entries(self, env):
        d = env["TROPICAL_CACHE_DIR"]
        out = {}
        for n in os.listdir(d):
            if n.endswith(".entry"):
                with open(os.path.join(d, n), "rb") as f:
                    out[n] = f.read()
        return out

    def remote_keys(self, db=0):
        return sorted(k.decode() for k in self.redis(db)("KEYS", "tropical:%d:*" % FORMAT))

    def warnings(self, proc):
        return [line for line in proc.stderr.splitlines() if "warning" in line]

    # (1) A warms with a signing key; B (empty primary, trusted public key) compiles nothing.
    def test_machine_b_gets_a_warmed_entries_without_compiling(self):
        a = self.machine_env("a", sign=self.private)
        compiled, _ = self.warm(a, KERNEL, OTHER)
        self.assertEqual(compiled, 2)
        self.assertEqual(len(self.remote_keys()), 2)
        b = self.machine_env("b", trust=self.public)
        compiled, proc = self.warm(b, KERNEL, OTHER)
        self.assertEqual(compiled, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.entries(b), self.entries(a))  # landed in B's primary, byte for byte
        self.assertIn("hits 2", proc.stdout)
        stats = json.loads(self.run_tropical("stats", "--json", env=b).stdout)
        self.assertEqual(stats["machine"]["compiles"], 0)
        self.assertEqual(self.warnings(proc), [])
        # A warm of what is cached already publishes it too (a CI job re-warming the fleet).
        self.redis()("FLUSHDB")
        self.warm(a, KERNEL, OTHER)
        self.assertEqual(len(self.remote_keys()), 2)

    # (2) Tampered values are refused, recompiled locally, and no wrong image is loaded.
    # Publishing cached kernels is the library's policy: the C ABI and Python do what `tropical warm` does.
    def test_the_library_publishes_cached_kernels_from_c_and_python(self):
        a = self.machine_env("a")  # no signing key: its warm publishes nothing
        compiled, _ = self.warm(a, KERNEL)
        self.assertEqual(compiled, 1)
        self.assertEqual(self.remote_keys(), [])
        signed = dict(a, TROPICAL_REMOTE_SIGNING_KEY=self.private,
                      TROPICAL_LIBRARY=os.path.join(os.path.dirname(TROPICAL), "libtropical.so.0"),
                      PYTHONPATH=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
        code = "import sys, tropical; print(tropical.publish_cached([sys.argv[1]], arch=90))"

        def publish():
            proc = subprocess.run([sys.executable, "-c", code, KERNEL], capture_output=True, text=True, env=signed,
                                  timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertEqual(self.warnings(proc), [])
            return int(proc.stdout.strip())

        self.assertEqual(publish(), 1)  # cached, compiled again here, that compile published
        self.assertEqual(len(self.remote_keys()), 1)
        self.assertEqual(publish(), 0)  # the fleet has it
        b = self.machine_env("b", trust=self.public)
        compiled, proc = self.warm(b, KERNEL)
        self.assertEqual(compiled, 0, proc.stdout + proc.stderr)

    def test_tampered_values_are_refused_and_recompiled(self):
        a = self.machine_env("a", sign=self.private)
        self.warm(a, KERNEL, OTHER)
        reference = self.entries(a)
        r = self.redis()
        key_of = {}
        for key in self.remote_keys():
            digest = key.rsplit(":", 1)[1]
            key_of[digest + ".entry"] = key
        kernel_key = "tropical:%d:%s" % (FORMAT, self.digest_of(KERNEL))
        self.assertIn(kernel_key, key_of.values())
        other_key = [k for k in key_of.values() if k != kernel_key][0]
        good = r("GET", kernel_key)
        # An unsigned value and one signed by an untrusted key, made by producers on other databases.
        self.warm(self.machine_env("unsigned-producer", db=1, unsigned=True), KERNEL, OTHER)
        rogue = os.path.join(self.tmp, "rogue")
        self.run_tropical("keygen", rogue, env=a)
        self.warm(self.machine_env("rogue-producer", db=2, sign=os.path.join(rogue, "tropical-remote-signing.pem")),
                  KERNEL, OTHER)
        flipped = bytearray(good)
        flipped[len(flipped) // 3] ^= 0x01
        cases = {
            "bad signature (flipped byte)": bytes(flipped),
            "bad signature (another key's entry)": r("GET", other_key),
            "unsigned": self.redis(1)("GET", kernel_key),
            "untrusted key": self.redis(2)("GET", kernel_key),
        }
        for i, (cause, value) in enumerate(cases.items()):
            with self.subTest(cause):
                self.assertIsNotNone(value)
                self.assertNotEqual(value, good)
                r("SET", kernel_key, value)
                b = self.machine_env("b%d" % i, trust=self.public)
                compiled, proc = self.warm(b, KERNEL)
                self.assertEqual(compiled, 1, proc.stdout + proc.stderr)
                self.assertEqual(len(self.warnings(proc)), 1, proc.stderr)
                self.assertIn("refused", proc.stderr)
                self.assertIn(cause.split(" (")[0], proc.stderr)
                self.assertEqual(self.entries(b), {n: v for n, v in reference.items() if key_of[n] == kernel_key})

    # (3) A remote absent, killed or paused: the run finishes, with bounded extra time and one warning.
    def test_failing_remote_costs_at_most_its_timeouts_and_one_warning(self):
        timeouts = dict(TROPICAL_REMOTE_CONNECT_TIMEOUT="250ms", TROPICAL_REMOTE_TIMEOUT="500ms")
        bound = (0.25 + 0.5) * 1.1

        def timed(env):
            start = time.monotonic()
            compiled, proc = self.warm(env, KERNEL, OTHER)
            return time.monotonic() - start, compiled, proc

        baseline = min(timed(self.machine_env("base%d" % i, url="unix://" + self.tmp + "/none.sock",
                                              TROPICAL_REMOTE_COOLDOWN="60s", **timeouts))[0] for i in range(2))
        for name, breaking in [("absent", lambda: None),
                               ("killed", lambda: (self.server.kill(), self.server.wait())),
                               ("paused", lambda: os.kill(self.server.pid, signal.SIGSTOP))]:
            with self.subTest(name):
                url = "unix://" + self.tmp + "/absent.sock" if name == "absent" else None
                breaking()
                runs = []
                for attempt in range(2):  # the faster of two: a shared CI machine is noisy
                    env = self.machine_env("%s%d" % (name, attempt), sign=self.private, trust=self.public, url=url,
                                           **timeouts)
                    elapsed, compiled, proc = timed(env)
                    self.assertEqual(compiled, 2)
                    self.assertEqual(len(self.entries(env)), 2)
                    self.assertEqual(len(self.warnings(proc)), 1, proc.stderr)
                    runs.append(elapsed)
                # Noise of a shared machine: 0.3 s on top of the bound.
                self.assertLess(min(runs) - baseline, bound + 0.3, proc.stderr)
                if name == "killed":
                    self.start_server()

    def digest_of(self, kernel):
        env = self.machine_env("digest", url="unix://" + self.tmp + "/none.sock", TROPICAL_REMOTE_UNSIGNED="1")
        before = set(self.entries(env)) if os.path.isdir(env["TROPICAL_CACHE_DIR"]) else set()
        self.warm(env, kernel)
        (name,) = set(self.entries(env)) - before
        return name[:-len(".entry")]

    # (4) 8 machines cold on one key compile it once; a dead holder's lease only delays them to its end.
    def test_eight_machines_compile_one_key_once_and_outlive_a_dead_holder(self):
        def fleet(tag, count):
            procs = []
            for i in range(count):
                env = self.machine_env("%s%d" % (tag, i), sign=self.private, trust=self.public)
                procs.append(subprocess.Popen([TROPICAL, "warm", "--arch", "sm_90", "-j", "1", KERNEL], env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            total = 0
            for p in procs:
                out, err = p.communicate(timeout=120)
                self.assertEqual(p.returncode, 0, out + err)
                total += int(out.split(", ")[1].split()[0])
            return total

        self.assertEqual(fleet("cold", 8), 1)
        # A holder that died with the lease: it expires after 3 s, then one machine compiles.
        digest = self.digest_of(KERNEL)
        self.redis()("FLUSHDB")
        self.redis()("SET", "tropical:lock:%d:%s" % (FORMAT, digest), "dead-holder", "PX", 3000)
        start = time.monotonic()
        self.assertEqual(fleet("after", 4), 1)
        self.assertLess(time.monotonic() - start, 3.0 + 0.25 + 5.0)  # the lease, one poll, and the compile

    # (5) A reader with neither trusted keys nor TROPICAL_REMOTE_UNSIGNED never reads remote entries.
    def test_reader_without_keys_never_reads_remote_entries(self):
        self.warm(self.machine_env("a", sign=self.private), KERNEL)
        r = self.redis()
        calls = lambda: sum(int(line.split(b"calls=")[1].split(b",")[0])
                            for line in r("INFO", "commandstats").splitlines() if line.startswith(b"cmdstat_get"))
        before = calls()
        env = self.machine_env("reader")
        compiled, proc = self.warm(env, KERNEL)
        self.assertEqual(compiled, 1)
        self.assertIn("remote cache off", proc.stderr)
        self.assertEqual(calls(), before)
        self.assertIsNone(json.loads(self.run_tropical("stats", "--json", env=env).stdout)["remote"])

    # The remote settings also live in the cache's tropical.conf (`tropical config`); the environment wins.
    def test_remote_settings_from_tropical_conf_and_the_environment_over_them(self):
        a = self.machine_env("a", sign=self.private)
        compiled, _ = self.warm(a, KERNEL, OTHER)
        self.assertEqual(compiled, 2)
        b = self.machine_env("b")
        del b["TROPICAL_REMOTE_CACHE"]  # nothing in the environment: the file alone configures B
        self.run_tropical("config", "remote", "unix://" + self.sock, env=b)
        self.run_tropical("config", "remote_trusted_keys", self.public, env=b)
        self.run_tropical("config", "remote_timeout", "2s", env=b)
        # Bad values are refused unwritten (exit 2), with the key named.
        for key, value in [("remote", "redis://nowhere"), ("remote_ttl", "soon"),
                           ("remote_signing_key", "relative.pem"), ("remote_unsigned", "maybe")]:
            proc = self.run_tropical("config", key, value, env=b, code=2)
            self.assertIn(key, proc.stderr)
        shown = self.run_tropical("config", env=b).stdout
        self.assertIn("remote = unix://" + self.sock, shown)
        self.assertIn("remote_trusted_keys = " + self.public, shown)
        self.assertIn("# remote_ttl = 30d (default)", shown)  # the refused value was not written
        compiled, proc = self.warm(b, KERNEL, OTHER)
        self.assertEqual(compiled, 0, proc.stdout + proc.stderr)
        self.assertIn("hits 2", proc.stdout)
        self.assertEqual(self.entries(b), self.entries(a))
        self.assertEqual(self.warnings(proc), [])
        stats = json.loads(self.run_tropical("stats", "--json", env=b).stdout)
        self.assertEqual(stats["remote"]["url"], "unix://" + self.sock)
        self.assertFalse(stats["remote"]["publish"])
        # The environment overrides the file: set empty, the remote is off for that process.
        c = self.machine_env("c")
        del c["TROPICAL_REMOTE_CACHE"]
        self.run_tropical("config", "remote", "unix://" + self.sock, env=c)
        self.run_tropical("config", "remote_trusted_keys", self.public, env=c)
        off = dict(c, TROPICAL_REMOTE_CACHE="")
        self.assertIn("overridden by TROPICAL_REMOTE_CACHE=", self.run_tropical("config", env=off).stdout)
        compiled, proc = self.warm(off, KERNEL)
        self.assertEqual(compiled, 1, proc.stdout + proc.stderr)
        self.assertIsNone(json.loads(self.run_tropical("stats", "--json", env=off).stdout)["remote"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
