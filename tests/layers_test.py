"""Cache layers, fallback, team directory and tropical.conf through the `tropical` command.

(1) root warms a layer; a fresh non-root user with an empty primary compiles nothing and the hits are
promoted; (2) a layer writable by others is refused with one warning, the program still works; (3) a
tampered layer entry is refused and recompiled into the primary, the layer untouched; (5) a primary that
cannot be created falls back to $TMPDIR/tropical-<uid> with one warning, then to memory; (6) a team directory
shared by two users of one group: the second hits the first one's entries; (7) `tropical config max_size`
holds for a process with no environment, and the environment overrides it. (4), the installed prebuilt
layer, is in consumers_test.py. Tests that need a second user create one with useradd when run as root,
and are skipped with a message otherwise.

Kernels are three backward kernels (some 30 ms each to compile) rather than `--all` (minutes).

Usage: layers_test.py PATH_TO_TROPICAL
"""

import grp
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import unittest

TROPICAL = os.path.abspath(sys.argv[1])
KERNELS = ["tropical_backward_a_maxplus_f32", "tropical_backward_b_maxplus_f32", "tropical_backward_a_minplus_f32"]
ROOT = os.geteuid() == 0
TAG = str(os.getpid())


def warnings(stderr):
    return [line for line in stderr.splitlines() if "warning" in line]


def entries(directory):
    if not os.path.isdir(directory):
        return []
    return sorted(name for name in os.listdir(directory) if name.endswith(".entry"))


class LayersTest(unittest.TestCase):
    users = []
    group = None

    @classmethod
    def setUpClass(cls):
        if not ROOT:
            return
        cls.group = "trgrp" + TAG
        subprocess.run(["groupadd", cls.group], check=True)
        for name in ["tra" + TAG, "trb" + TAG]:
            subprocess.run(["useradd", "-M", "-N", "-G", cls.group, "-s", "/usr/sbin/nologin", name], check=True)
            cls.users.append(name)

    @classmethod
    def tearDownClass(cls):
        for name in cls.users:
            subprocess.run(["userdel", name], check=False)
        if cls.group:
            subprocess.run(["groupdel", cls.group], check=False)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tropical-layers-")
        os.chmod(self.tmp, 0o755)  # other users of the test pass through
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TROPICAL_")}
        self.env["TMPDIR"] = self.dir("tmp", 0o1777)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def dir(self, name, mode=0o755):
        path = os.path.join(self.tmp, name)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)
        return path

    def need_users(self):
        if not ROOT:
            self.skipTest("needs root to create test users with useradd (CI runs as root)")

    def tropical(self, *args, user=None, code=0, **env):
        full = dict(self.env, **env)
        command = [TROPICAL, *args]
        if user is not None:
            entry = pwd.getpwnam(user)
            command = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups"] + command
            full["HOME"] = self.tmp
        proc = subprocess.run(command, capture_output=True, text=True, env=full, timeout=600)
        self.assertEqual(proc.returncode, code, f"{' '.join(command)}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def warm(self, *args, **kw):
        return self.tropical("warm", "--arch", "sm_90", *args, *KERNELS, **kw)

    def compiled(self, proc):
        return int(proc.stdout.split(" compiled")[0].rsplit(", ", 1)[1])

    def shipped_layer(self):
        """A layer warmed by root (or this user) and made readable to all, as a Dockerfile would."""
        layer = self.dir("layer")
        self.assertEqual(self.compiled(self.warm("--cache-dir", layer)), len(KERNELS))
        subprocess.run(["chmod", "-R", "a+rX,go-w", layer], check=True)
        return layer

    def test_1_fresh_user_compiles_nothing_from_a_root_layer_and_hits_are_promoted(self):
        self.need_users()
        layer = self.shipped_layer()
        user = self.users[0]
        primary = os.path.join(self.dir("home", 0o777), "cache")
        proc = self.warm(user=user, TROPICAL_CACHE_DIR=primary, TROPICAL_CACHE_LAYERS=layer)
        self.assertEqual(self.compiled(proc), 0, proc.stdout + proc.stderr)
        self.assertEqual(warnings(proc.stderr), [])
        self.assertEqual(entries(primary), entries(layer))  # promoted
        self.assertEqual(os.stat(os.path.join(primary, entries(primary)[0])).st_uid, pwd.getpwnam(user).pw_uid)
        stores = json.loads(self.tropical("stats", "--json", user=user, TROPICAL_CACHE_DIR=primary,
                                          TROPICAL_CACHE_LAYERS=layer).stdout)["tiers"]
        self.assertEqual([t["kind"] for t in stores[:2]], ["local", "layer"])
        self.assertEqual(stores[1]["location"], layer)
        self.assertTrue(stores[1]["usable"], stores[1])
        self.assertEqual(stores[1]["entries"], len(KERNELS))
        # Once promoted, the layer is not needed.
        self.assertEqual(self.compiled(self.warm(user=user, TROPICAL_CACHE_DIR=primary)), 0)

    def test_1b_layer_entry_of_root_is_read_by_root_too(self):
        layer = self.shipped_layer()
        primary = os.path.join(self.tmp, "primary")
        proc = self.warm(TROPICAL_CACHE_DIR=primary, TROPICAL_CACHE_LAYERS=layer + ":/nonexistent-" + TAG)
        self.assertEqual(self.compiled(proc), 0, proc.stderr)
        self.assertEqual(len(warnings(proc.stderr)), 1, proc.stderr)  # the missing layer, once
        self.assertIn("nonexistent", proc.stderr)

    def test_2_layer_writable_by_others_is_refused_with_one_warning(self):
        layer = self.shipped_layer()
        os.chmod(layer, 0o777)
        primary = os.path.join(self.tmp, "primary")
        proc = self.warm(TROPICAL_CACHE_DIR=primary, TROPICAL_CACHE_LAYERS=layer)
        self.assertEqual(self.compiled(proc), len(KERNELS))
        self.assertEqual(len(warnings(proc.stderr)), 1, proc.stderr)
        self.assertIn("writable by others", proc.stderr)
        stats = json.loads(self.tropical("stats", "--json", TROPICAL_CACHE_DIR=primary,
                                         TROPICAL_CACHE_LAYERS=layer).stdout)
        self.assertFalse(stats["tiers"][1]["usable"])
        self.assertIn("refused", stats["tiers"][1]["status"])

    def test_3_tampered_layer_entry_is_recompiled_into_the_primary_and_the_layer_untouched(self):
        layer = self.shipped_layer()
        victim = os.path.join(layer, entries(layer)[0])
        with open(victim, "r+b") as f:
            f.seek(-1, os.SEEK_END)
            last = f.read(1)
            f.seek(-1, os.SEEK_END)
            f.write(bytes([last[0] ^ 0xFF]))
        with open(victim, "rb") as f:
            tampered = f.read()
        primary = os.path.join(self.tmp, "primary")
        proc = self.warm(TROPICAL_CACHE_DIR=primary, TROPICAL_CACHE_LAYERS=layer, TROPICAL_LOG="info")
        self.assertEqual(self.compiled(proc), 1, proc.stderr)
        self.assertIn("corrupt entry", proc.stderr)
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), tampered)
        self.assertEqual(entries(primary), entries(layer))
        with open(os.path.join(primary, entries(layer)[0]), "rb") as f:
            self.assertNotEqual(f.read(), tampered)

    def test_5_unwritable_primary_falls_back_with_one_warning_then_to_memory(self):
        user = self.users[0] if ROOT else None
        blocked = self.dir("blocked", 0o555)  # no user but root creates anything here
        if not ROOT:
            self.assertFalse(os.access(blocked, os.W_OK), "cannot make an unwritable directory")
        primary = os.path.join(blocked, "cache")
        proc = self.tropical("warm", "--arch", "sm_90", KERNELS[0], user=user, TROPICAL_CACHE_DIR=primary)
        self.assertEqual(len(warnings(proc.stderr)), 1, proc.stderr)
        uid = pwd.getpwnam(user).pw_uid if user else os.geteuid()
        fallback = os.path.join(self.env["TMPDIR"], f"tropical-{uid}")
        self.assertIn(fallback, proc.stderr)
        self.assertEqual(len(entries(fallback)), 1)
        self.assertEqual(os.stat(fallback).st_mode & 0o777, 0o700)
        # Neither usable: memory only, still one warning and exit 0 for a command that stores nothing.
        proc = self.tropical("list", user=user, TROPICAL_CACHE_DIR=primary, TMPDIR=blocked)
        self.assertEqual(len(warnings(proc.stderr)), 1, proc.stderr)
        self.assertIn("memory only", proc.stderr)

    def test_6_team_directory_second_user_hits_the_first_users_entries(self):
        self.need_users()
        team = self.dir("team", 0o2770)
        os.chown(team, 0, grp.getgrnam(self.group).gr_gid)
        first, second = self.users
        proc = self.warm(user=first, TROPICAL_CACHE_DIR=team)
        self.assertEqual(self.compiled(proc), len(KERNELS))
        self.assertEqual(warnings(proc.stderr), [])
        for name in entries(team):
            self.assertEqual(os.stat(os.path.join(team, name)).st_mode & 0o7777, 0o640)
        proc = self.warm(user=second, TROPICAL_CACHE_DIR=team)
        self.assertEqual(self.compiled(proc), 0, proc.stdout + proc.stderr)
        self.assertEqual(warnings(proc.stderr), [])
        # World-writable is never trusted for writing.
        os.chmod(team, 0o2777)
        proc = self.tropical("list", user=second, TROPICAL_CACHE_DIR=team)
        self.assertEqual(len(warnings(proc.stderr)), 1, proc.stderr)

    def test_7_config_max_size_holds_without_env_and_env_overrides_it(self):
        primary = os.path.join(self.tmp, "primary")
        env = {"TROPICAL_CACHE_DIR": primary}
        self.assertIn("max_size = 10M", self.tropical("config", "max_size", "10M", **env).stdout)
        self.assertEqual(self.tropical("config", "max_size", **env).stdout, "10M\n")
        self.assertIn("max_size = 10M", self.tropical("config", **env).stdout)
        self.assertEqual(json.loads(self.tropical("stats", "--json", **env).stdout)["cache"]["max_bytes"], 10 << 20)
        override = json.loads(self.tropical("stats", "--json", TROPICAL_CACHE_MAX_SIZE="20M", **env).stdout)
        self.assertEqual(override["cache"]["max_bytes"], 20 << 20)
        # The limit holds: with 1 byte allowed, only the entry just stored stays. One writer (-j 1): concurrent
        # writers under a limit smaller than one entry each keep only their own and may evict each other's.
        self.tropical("config", "max_size", "1", **env)
        proc = self.warm("-j", "1", code=1, **env)  # warm says what it could not keep
        self.assertIn("limit 1 bytes", proc.stderr)
        self.assertEqual(len(entries(primary)), 1)
        self.tropical("config", "max_size", "lots", code=2, **env)
        self.tropical("config", "colour", "blue", code=2, **env)
        self.tropical("config", "--unset", "max_size", **env)
        # Unset: the value in effect and where it comes from.
        self.assertEqual(self.tropical("config", "max_size", **env).stdout, "1G (default)\n")
        self.assertEqual(self.tropical("config", "max_size", TROPICAL_CACHE_MAX_SIZE="2G", **env).stdout,
                         "2G (TROPICAL_CACHE_MAX_SIZE)\n")
        self.assertIn("# max_size = 1G (default)", self.tropical("config", **env).stdout)
        # Unknown keys in the file are kept and warned about once.
        with open(os.path.join(primary, "tropical.conf"), "a") as f:
            f.write("remote_future = x\n")
        proc = self.tropical("config", "layers", "/opt/a:/opt/b", **env)
        self.assertEqual(len(warnings(proc.stderr)), 1, proc.stderr)
        self.assertIn("remote_future = x", open(os.path.join(primary, "tropical.conf")).read())

    def test_cache_dir_flag_overrides_the_environment_on_every_command(self):
        flag = os.path.join(self.tmp, "flag")
        env_dir = os.path.join(self.tmp, "env")
        self.tropical("warm", "--arch", "sm_90", KERNELS[0], "--cache-dir", flag, TROPICAL_CACHE_DIR=env_dir)
        self.assertEqual(len(entries(flag)), 1)
        self.assertEqual(entries(env_dir), [])
        for args in (["list"], ["stats"], ["config"], ["clear", KERNELS[0]]):
            proc = self.tropical(*args, f"--cache-dir={flag}", TROPICAL_CACHE_DIR=env_dir)
            self.assertIn(flag, proc.stdout, args)
        self.assertEqual(entries(flag), [])
        self.tropical("list", "--cache-dir", code=2)
        self.tropical("list", "--cache-dir", "a", "--cache-dir", "b", code=2)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
