#!/usr/bin/python3
"""A hostile fleet: `tropical warm` of 3 kernels under a hostile Redis (and hostile key files) against no
Redis at all: wall time and peak RSS (/usr/bin/time), and whether the images left in the cache are the ones a
run without Redis leaves. CPU only; starts its own redis-server in a temporary directory.

Usage: bench/hostile_fleet.py PATH_TO_TROPICAL [PATH_TO_REDIS_SERVER]
"""
import os, re, shutil, socket, subprocess, sys, tempfile, threading, time

REDIS_SERVER = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/redis-server"
sys.argv = [sys.argv[0], sys.argv[1], REDIS_SERVER]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import fleet_test  # noqa: E402  (its RESP client)

T = sys.argv[1]
K = ["tropical_backward_a_maxplus_f32", "tropical_backward_b_maxplus_f32", "tropical_backward_a_minplus_f32"]
tmp = tempfile.mkdtemp(prefix="hostile-")
sock = os.path.join(tmp, "redis.sock")
srv = subprocess.Popen([REDIS_SERVER, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                        "--save", "", "--appendonly", "no", "--dir", tmp, "--proto-max-bulk-len", "1gb"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
R = fleet_test.Redis(sock)
keys = os.path.join(tmp, "keys")
subprocess.run([T, "keygen", keys], check=True, capture_output=True)
priv, pub = os.path.join(keys, "tropical-remote-signing.pem"), os.path.join(keys, "tropical-remote-signing.pub.pem")

def env(name, **extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("TROPICAL_")}
    e["TROPICAL_CACHE_DIR"] = os.path.join(tmp, name)
    e.update(extra)
    return e

def run(name, e):
    start = time.monotonic()
    try:
        p = subprocess.run(["timeout", "-s", "KILL", "60", "/usr/bin/time", "-f", "MAXRSS %M", T, "warm", "--arch",
                            "sm_90", "-j", "1"] + K, env=e, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        return 60.0, 0, {}, "", "killed"
    if "MAXRSS" not in p.stderr:
        return time.monotonic() - start, 0, {}, p.stdout, "killed after 60 s"
    out, err = p.stdout, p.stderr
    wall = time.monotonic() - start
    class ru: ru_maxrss = int(re.search(r"MAXRSS (\d+)", err).group(1))
    ents = {n: open(os.path.join(e["TROPICAL_CACHE_DIR"], n), "rb").read()
            for n in os.listdir(e["TROPICAL_CACHE_DIR"]) if n.endswith(".entry")}
    return wall, ru.ru_maxrss / 1024, ents, out, err

base_wall, base_rss, good, _, _ = run("base", env("base"))
print("no Redis: %.2f s, %.0f MB" % (base_wall, base_rss))
# The digests: a producer publishes, then the values are replaced by hostile ones.
run("producer", env("producer", TROPICAL_REMOTE_CACHE="unix://" + sock, TROPICAL_REMOTE_SIGNING_KEY=priv))
redis_keys = [k.decode() for k in R("KEYS", "tropical:*")]
digests = [k.split(":")[-1] for k in redis_keys]
cases = []
def case(name, setup, **extra):
    R("FLUSHDB"); setup()
    e = env(name, TROPICAL_REMOTE_CACHE="unix://" + sock, TROPICAL_REMOTE_TRUSTED_KEYS=pub,
            TROPICAL_REMOTE_SIGNING_KEY=priv, **extra)
    wall, rss, ents, out, err = run(name, e)
    ok = ents == good
    print("%-44s %.2f s (+%.2f), %4.0f MB (+%.0f), images %s" % (name, wall, wall - base_wall, rss, rss - base_rss,
                                                              "correct" if ok else "WRONG"))
case("leases with no TTL", lambda: [R("SET", "tropical:lock:3:" + d, "x") for d in digests])
case("leases with a 1-hour TTL", lambda: [R("SET", "tropical:lock:3:" + d, "x", "PX", 3600000) for d in digests])
big = os.urandom(1 << 20) * 60
case("60 MB garbage values (under the cap)", lambda: [R("SET", "tropical:3:" + d, big) for d in digests])
huge = b"\0" * (250 << 20)
case("250 MB values (over the cap)", lambda: [R("SET", "tropical:3:" + d, huge) for d in digests])
# A fake server that answers every command with an array header of 2,000,000,000 elements.
fake = os.path.join(tmp, "fake.sock")
ls = socket.socket(socket.AF_UNIX); ls.bind(fake); ls.listen(64)
def serve():
    while True:
        try: c, _ = ls.accept()
        except OSError: return
        def one(c=c):
            try:
                while c.recv(65536): c.sendall(b"*2000000000\r\n")
            except OSError: pass
        threading.Thread(target=one, daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
e = env("fake", TROPICAL_REMOTE_CACHE="unix://" + fake, TROPICAL_REMOTE_TRUSTED_KEYS=pub, TROPICAL_REMOTE_SIGNING_KEY=priv)
wall, rss, ents, out, err = run("fake", e)
print("%-44s %.2f s (+%.2f), %4.0f MB (+%.0f), images %s" % ("server answering *2000000000", wall, wall - base_wall,
      rss, rss - base_rss, "correct" if ents == good else "WRONG"))
# A server that runs no scripts (EVAL renamed away): leases are plain SET NX, a planted one is ignored.
nosock = os.path.join(tmp, "noscripts.sock")
nosrv = subprocess.Popen([REDIS_SERVER, "--port", "0", "--unixsocket", nosock, "--unixsocketperm", "700", "--save", "",
                          "--appendonly", "no", "--dir", tmp, "--dbfilename", "noscripts.rdb",
                          "--rename-command", "EVAL", ""], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
NR = fleet_test.Redis(nosock)
for d in digests:
    NR("SET", "tropical:lock:3:" + d, "x")
e = env("noscripts", TROPICAL_REMOTE_CACHE="unix://" + nosock, TROPICAL_REMOTE_TRUSTED_KEYS=pub,
        TROPICAL_REMOTE_SIGNING_KEY=priv)
wall, rss, ents, out, err = run("noscripts", e)
print("%-44s %.2f s (+%.2f), %4.0f MB (+%.0f), images %s" % ("no scripts, leases with no TTL", wall, wall - base_wall,
      rss, rss - base_rss, "correct" if ents == good else "WRONG"))
nosrv.kill()
# Hostile key files: every one is refused at once, the node compiles locally.
fifo = os.path.join(tmp, "k.fifo"); os.mkfifo(fifo)
sparse = os.path.join(tmp, "sparse.pem")
with open(sparse, "wb") as f:
    f.truncate(8 << 30)
loose = os.path.join(tmp, "loose.pub.pem")
shutil.copy(pub, loose); os.chmod(loose, 0o666)
for label, trusted, signing in (("FIFO key files", fifo, fifo), ("/dev/zero as key files", "/dev/zero", "/dev/zero"),
                                ("8 GB sparse key files", sparse, sparse), ("a public key of mode 0666", loose, priv)):
    R("FLUSHDB")
    e = env("keys", TROPICAL_REMOTE_CACHE="unix://" + sock, TROPICAL_REMOTE_TRUSTED_KEYS=trusted,
            TROPICAL_REMOTE_SIGNING_KEY=signing)
    wall, rss, ents, out, err = run("keys", e)
    print("%-44s %.2f s (+%.2f), %4.0f MB (+%.0f), images %s" % (label, wall, wall - base_wall, rss,
          rss - base_rss, "correct" if ents == good else "WRONG"))
    shutil.rmtree(e["TROPICAL_CACHE_DIR"], ignore_errors=True)
srv.kill(); shutil.rmtree(tmp, ignore_errors=True)
