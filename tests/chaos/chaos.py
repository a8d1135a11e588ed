#!/usr/bin/env python3
"""chaos.py: several wombatkvd daemons on one S3 bucket, writers on all of them, and a chaos loop
that SIGKILLs and SIGSTOPs the daemons while the writers work; then a final check that every
acknowledged chain is readable, with bytes some writer put, on every daemon, and an audit.

  tests/chaos/chaos.py --daemons 2 --writers 3 --minutes 7 --budget 4M --seed 1
  tests/chaos/chaos.py --minutes 3 --seed 2                      # no budget: nothing may go

S3: by default `scripts/s3-server.sh start radosgw` (reused if already up; stopped at the end only
if this run started it, unless --keep-s3), or --s3-endpoint/--s3-bucket with the keys in
WMBT_KV_S3_ACCESS_KEY/WMBT_KV_S3_SECRET_KEY. Each run uses its own L2 prefix (chaos/RUN).
Writers are child processes using libwombatkv through ctypes (examples/python/wombatkv.py) and
wmbt_kv_open_tcp. Every save is logged (OUT/writer-N.jsonl: namespace, keys, SHA-256 and variant
of each block, acknowledged or not); a get returning bytes no writer put for that key is a
violation (OUT/violations.jsonl). Errors while a daemon is down are expected; wrong bytes never.
Exit 0 only with no violation, a clean audit and every daemon restarted; 1 otherwise. Not run by
ctest (docs/testing.md, "Chaos runs").
"""
import argparse, ctypes, hashlib, json, os, random, re, signal, socket, subprocess, sys, time
import urllib.error, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCK_TOKENS = 16


def log(msg):
    print("chaos %s %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the store through ctypes ------------------------------------------------------------------

def binding(build):
    os.environ["WOMBATKV_LIB"] = os.path.join(build, "src/capi/libwombatkv.so")
    sys.path.insert(0, os.path.join(ROOT, "examples/python"))
    import wombatkv
    lib = wombatkv._lib
    lib.wmbt_kv_open_tcp.restype, lib.wmbt_kv_open_tcp.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    lib.wmbt_kv_refresh.restype = ctypes.c_int32
    lib.wmbt_kv_refresh.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]

    class Conn(wombatkv.Store):
        def __init__(self, addr):  # wmbt_kv_open_tcp; the handle reconnects by itself later
            self._h = wombatkv._check(lib.wmbt_kv_open_tcp(addr.encode()), None)

        def refresh(self):
            wombatkv._check(lib.wmbt_kv_refresh(self._h, None, 0))
    return wombatkv, Conn


def payload(key, variant, size):
    """Variant `variant` of a block's bytes: a kernel whose output depends on the run (variant>0)."""
    seed = hashlib.sha256(bytes.fromhex(key) + bytes([variant])).digest()
    return (seed * (size // 32 + 1))[:size]


def sha(b):
    return hashlib.sha256(b).hexdigest()


# ---- a writer (child process) -------------------------------------------------------------------

def writer_main(spec):
    wkv, Conn = binding(spec["build"])
    i, size, nvar = spec["index"], spec["block_bytes"], spec["variants"]
    rng = random.Random("%s/%d" % (spec["seed"], i))
    ns = "chaos%d" % (i % spec["namespaces"])
    addrs, conns = spec["addrs"], {}
    out = open(os.path.join(spec["out"], "writer-%d.jsonl" % i), "a")
    bad = open(os.path.join(spec["out"], "violations.jsonl"), "a")
    st = dict(turns=0, hit_blocks=0, checked_blocks=0, acked=0, failed=0, errors=0, misses=0,
              corruption_errors=0, violations=0, variant_saves=0, variants_seen=[0] * nvar)
    known = {}  # key -> {sha256: variant} of every variant this harness can make

    def variants_of(key):
        if key not in known:
            known[key] = {sha(payload(key, v, size)): v for v in range(nvar)}
        return known[key]

    def conn(d):
        if d not in conns:
            conns[d] = Conn(addrs[d])
        return conns[d]

    def error(e):
        st["errors"] += 1
        if e.code == 5:  # CORRUPTION: detected and not served, as promised; worth a look
            st["corruption_errors"] += 1
        st["last_error"] = str(e)[:200]
        time.sleep(0.2)

    system = list(range(1000, 1000 + spec["system_blocks"] * BLOCK_TOKENS))
    last_status = 0
    while time.time() < spec["deadline"]:
        tokens = list(system)
        for _ in range(rng.randint(1, spec["max_turns"])):
            if time.time() >= spec["deadline"]:
                break
            tokens += [rng.randrange(1 << 20) for _ in range(2 * BLOCK_TOKENS)]
            keys, parent = [], "0" * 64
            for j in range(0, len(tokens), BLOCK_TOKENS):
                parent = wkv.block_key(parent, tokens[j:j + BLOCK_TOKENS])
                keys.append(parent)
            d = rng.randrange(len(addrs))
            st["turns"] += 1
            vs, got_sha = [0] * len(keys), []
            try:
                c = conn(d)
                hit = c.lookup(keys, ns)
                bufs = [bytearray(size) for _ in range(hit)]
                lens = c.get_into(keys[:hit], bufs, ns) if hit else []
                if lens is None:
                    st["misses"] += 1  # evicted between the lookup and the get
                    lens = []
                for j, n in enumerate(lens):
                    got = bytes(bufs[j][:n])
                    got_sha.append(sha(got))
                    v = variants_of(keys[j]).get(got_sha[-1])
                    st["checked_blocks"] += 1
                    if v is None:
                        st["violations"] += 1
                        rec = dict(t=time.time(), writer=i, daemon=d, ns=ns, key=keys[j], index=j,
                                   chain=keys, hit=hit, got_len=n, got_sha256=sha(got),
                                   allowed=list(variants_of(keys[j])))
                        bad.write(json.dumps(rec) + "\n")
                        bad.flush()
                        log("VIOLATION writer %d daemon %d %s key %s" % (i, d, ns, keys[j][:16]))
                    else:
                        vs[j] = v
                        st["variants_seen"][v] += 1
                st["hit_blocks"] += len(lens)
            except wkv.WombatKVError as e:
                error(e)
                continue
            if rng.random() < spec["variant_rate"]:  # re-save a shared key with other bytes
                j = rng.randrange(spec["system_blocks"])
                vs[j] = rng.choice([v for v in range(nvar) if v != vs[j]])
                st["variant_saves"] += 1
            blocks = [payload(k, v, size) for k, v in zip(keys, vs)]
            rec = dict(ns=ns, keys=keys, sha256=[sha(b) for b in blocks], variants=vs, daemon=d,
                       got_sha256=got_sha)  # what this turn's get returned, checked at the end
            try:
                conn(d).put_chain(keys, blocks, ns)
                rec["ack"] = True
                st["acked"] += 1
            except wkv.WombatKVError as e:  # may or may not have taken effect: its bytes are allowed
                rec["ack"], rec["error"] = False, str(e)[:200]
                st["failed"] += 1
                error(e)
            rec["t"] = time.time()
            out.write(json.dumps(rec) + "\n")
            out.flush()
            if time.time() - last_status > 2:
                last_status = time.time()
                with open(spec["status"] + ".tmp", "w") as f:
                    json.dump(st, f)
                os.replace(spec["status"] + ".tmp", spec["status"])
    with open(spec["status"] + ".tmp", "w") as f:
        json.dump(st, f)
    os.replace(spec["status"] + ".tmp", spec["status"])
    for c in conns.values():
        c.close()


# ---- daemons --------------------------------------------------------------------------------------

class Daemon:
    def __init__(self, i, args, s3, prefix):
        self.i, self.args, self.proc, self.state = i, args, None, "down"
        self.tcp, self.http = free_port(), free_port()
        self.addr = "127.0.0.1:%d" % self.tcp
        self.data = os.path.join(args.out, "daemon-%d" % i)
        self.logpath = os.path.join(args.out, "daemon-%d.log" % i)
        self.cmd = [os.path.join(args.build, "tools/wombatkvd"), "--data-dir", self.data,
                    "--tcp", self.addr, "--http", "127.0.0.1:%d" % self.http,
                    "--bucket", s3["bucket"], "--s3-endpoint", s3["endpoint"],
                    "--s3-region", s3["region"], "--s3-prefix", prefix,
                    "--refresh-interval", args.refresh, "--cache-bytes", "32M",
                    "--disk-cache-bytes", "64M", "--log-level", "info"]
        if args.budget:
            self.cmd += ["--namespace-max-bytes", args.budget, "--gc-interval", args.gc_interval,
                         "--gc-grace", args.gc_grace]
        self.env = store_env(s3)

    def start(self, timeout=90):
        with open(self.logpath, "a") as f:
            f.write("=== chaos: start %s\n" % time.strftime("%H:%M:%S"))
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=open(self.logpath, "a"),
                                     stderr=subprocess.STDOUT)
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                self.state = "failed"
                return False
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.http, timeout=2):
                    self.state = "up"
                    return True
            except OSError:
                time.sleep(0.2)
        self.state = "not ready"
        return False

    def signal(self, sig):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(60) if self.proc else None
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "killed after 60 s"
        self.state = "down"
        return rc


def store_env(s3):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WMBT_KV_")}
    env.update(WMBT_KV_S3_ACCESS_KEY=s3["access"], WMBT_KV_S3_SECRET_KEY=s3["secret"])
    return env


def s3_server(args):
    """Returns (settings, started_here)."""
    if args.s3_endpoint:
        return dict(endpoint=args.s3_endpoint, bucket=args.s3_bucket, region=args.s3_region,
                    access=os.environ.get("WMBT_KV_S3_ACCESS_KEY", ""),
                    secret=os.environ.get("WMBT_KV_S3_SECRET_KEY", "")), False
    script = os.path.join(ROOT, "scripts/s3-server.sh")
    r = subprocess.run([script, "env", "radosgw"], capture_output=True, text=True)
    started = False
    if r.returncode != 0 or not answers(r.stdout):  # `start` would restart a slow server
        r = subprocess.run([script, "start", "radosgw"], capture_output=True, text=True)
        started = True
        if r.returncode != 0:
            sys.exit("chaos: s3-server.sh start radosgw failed:\n" + r.stderr)
    v = {}
    for line in r.stdout.splitlines():
        if line.startswith("export WOMBATKV_TEST_S3_"):
            name, _, value = line[len("export WOMBATKV_TEST_S3_"):].partition("=")
            v[name] = value
    return dict(endpoint=v["ENDPOINT"], bucket=v["BUCKET"], region=v["REGION"],
                access=v["ACCESS_KEY"], secret=v["SECRET_KEY"]), started


def answers(env_lines):
    """Whether the ENDPOINT of s3-server.sh's export lines answers HTTP within 10 s."""
    for line in env_lines.splitlines():
        if line.startswith("export WOMBATKV_TEST_S3_ENDPOINT="):
            try:
                urllib.request.urlopen(line.split("=", 1)[1], timeout=10)
            except urllib.error.HTTPError:
                return True
            except OSError:
                return False
            return True
    return False


# ---- the run --------------------------------------------------------------------------------------

def progress(args, daemons, events, t0):
    tot = {}
    for i in range(args.writers):
        try:
            with open(os.path.join(args.out, "writer-%d.status" % i)) as f:
                for k, v in json.load(f).items():
                    if isinstance(v, int):
                        tot[k] = tot.get(k, 0) + v
        except (OSError, ValueError):
            pass
    log("%4.0fs daemons %s | turns %d, blocks checked %d, saves acked %d failed %d, errors %d, "
        "variant saves %d, violations %d | chaos: %d kills, %d stops" % (
            time.time() - t0, " ".join("%d:%s" % (d.i, d.state) for d in daemons),
            tot.get("turns", 0), tot.get("checked_blocks", 0), tot.get("acked", 0),
            tot.get("failed", 0), tot.get("errors", 0), tot.get("variant_saves", 0),
            tot.get("violations", 0), events.count("kill"), events.count("stop")))
    return tot


def chaos_loop(args, daemons, writers, deadline, rng, t0):
    events, evlog = [], open(os.path.join(args.out, "events.jsonl"), "a")
    next_chaos, next_progress = time.time() + rng.uniform(*args.interval), 0
    while time.time() < deadline and any(w.poll() is None for w in writers):
        now = time.time()
        if now >= next_progress:
            progress(args, daemons, events, t0)
            next_progress = now + 15
        if now < next_chaos:
            time.sleep(min(0.5, next_chaos - now))
            continue
        d = rng.choice(daemons)
        if rng.random() < args.kill_fraction:
            down = rng.uniform(0, 3)
            d.signal(signal.SIGKILL)
            d.proc.wait()
            d.state = "killed"
            time.sleep(down)
            ok = d.start()
            ev = dict(t=time.time(), action="kill", daemon=d.i, down_s=round(down, 2),
                      restarted=ok, pid=d.proc.pid)
            events.append("kill" if ok else "restart failed")
            if not ok:
                log("daemon %d did not come back after SIGKILL (%s): see %s" % (
                    d.i, d.state, d.logpath))
        else:
            pause = rng.uniform(1, args.max_stop)
            d.signal(signal.SIGSTOP)
            d.state = "stopped"
            time.sleep(pause)
            d.signal(signal.SIGCONT)
            d.state = "up"
            ev = dict(t=time.time(), action="stop", daemon=d.i, stopped_s=round(pause, 2))
            events.append("stop")
        evlog.write(json.dumps(ev) + "\n")
        evlog.flush()
        next_chaos = time.time() + rng.uniform(*args.interval)
    return events


def final_check(args, daemons, Conn):
    """Every acknowledged chain, on every daemon: all of it readable with allowed bytes, or (only
    with a budget) a prefix of it (evicted tail)."""
    allowed, chains = {}, {}
    for i in range(args.writers):
        with open(os.path.join(args.out, "writer-%d.jsonl" % i)) as f:
            for line in f:
                r = json.loads(line)
                for k, h in zip(r["keys"], r["sha256"]):
                    allowed.setdefault((r["ns"], k), set()).add(h)
                if r["ack"]:
                    chains[(r["ns"], tuple(r["keys"]))] = True
    bad = open(os.path.join(args.out, "violations.jsonl"), "a")
    live_bad = 0  # a get during the run returned a variant that no save (even unacknowledged) put
    for i in range(args.writers):
        with open(os.path.join(args.out, "writer-%d.jsonl" % i)) as f:
            for line in f:
                r = json.loads(line)
                for j, h in enumerate(r.get("got_sha256", [])):
                    if h not in allowed[(r["ns"], r["keys"][j])]:
                        live_bad += 1
                        bad.write(json.dumps(dict(phase="run, checked at the end", writer=i,
                                                  ns=r["ns"], key=r["keys"][j], got_sha256=h,
                                                  t=r["t"])) + "\n")
    log("gets during the run returning bytes no save put (checked against every log): %d"
        % live_bad)
    res = []
    for d in daemons:
        c = Conn(d.addr)
        c.refresh()
        n = dict(daemon=d.i, acknowledged=len(chains), present=0, shortened=0, evicted=0,
                 unreadable=0, violations=0)
        for ns, keys in chains:
            m, lens, why = 0, None, None
            try:
                m = c.lookup(list(keys), ns)
                if m:
                    bufs = [bytearray(args.block_bytes) for _ in range(m)]
                    lens = c.get_into(list(keys[:m]), bufs, ns)
            except Exception as e:  # nothing runs but this check: an error is a finding too
                why = "error: %s" % e
            if why:
                pass
            elif m < len(keys) and not args.budget:
                why = "lookup matched %d of %d blocks without a budget" % (m, len(keys))
            elif m and lens is None and not args.budget:
                why = "lookup matched %d blocks, get missed" % m
            for j, ln in enumerate(lens or []):
                if sha(bytes(bufs[j][:ln])) not in allowed[(ns, keys[j])]:
                    why = "block %d (%s) has bytes no writer put" % (j, keys[j])
                    break
            if why:
                n["violations"] += 1
                bad.write(json.dumps(dict(phase="final", daemon=d.i, ns=ns, chain=keys,
                                          matched=m, detail=why)) + "\n")
            elif m == len(keys) and lens is not None:
                n["present"] += 1
            elif m and lens is not None:
                n["shortened"] += 1
            elif m:  # lookup matched, the get missed: only a concurrent eviction may do that
                n["unreadable"] += 1
            else:
                n["evicted"] += 1
        c.close()
        log("final check daemon %d: %s" % (d.i, json.dumps(n)))
        res.append(n)
    return res, live_bad


def audit(args, daemons, s3, prefix):
    """wombatkv audit of the bucket, with each daemon's data directory (daemons stopped: L1 too)."""
    clean, usage = True, None
    for d in daemons:
        env = store_env(s3)
        env.update(WMBT_KV_DATA_DIR=d.data, WMBT_KV_BUCKET=s3["bucket"],
                   WMBT_KV_S3_ENDPOINT=s3["endpoint"], WMBT_KV_S3_REGION=s3["region"],
                   WMBT_KV_S3_PREFIX=prefix)
        r = subprocess.run([os.path.join(args.build, "tools/wombatkv"), "audit", "--json", "-q"],
                           env=env, capture_output=True, text=True)
        with open(os.path.join(args.out, "audit-%d.json" % d.i), "w") as f:
            f.write(r.stdout + r.stderr)
        try:
            a = json.loads(r.stdout)
        except ValueError:
            log("audit with daemon %d's data dir: exit %d, no JSON: %s" % (
                d.i, r.returncode, r.stderr.strip()[:300]))
            clean = False
            continue
        clean = clean and r.returncode == 0 and a.get("clean", False)
        log("audit with daemon %d's data dir: exit %d, clean %s, L1 checked %s, keys %d, heads %d, "
            "blobs verified %d, violations %s, orphans %d (%d bytes)" % (
                d.i, r.returncode, a.get("clean"), a.get("l1_checked"), a.get("keys_listed", 0),
                a.get("heads_read", 0), a.get("blobs_verified", 0),
                a.get("violation_counts") or 0, a["orphans"]["count"], a["orphans"]["bytes"]))
        usage = a.get("usage")
    for row in usage or []:
        if row.get("fingerprint") is None and row.get("namespace") not in (None, "TOTAL"):
            l2 = row["l2"]  # blob_bytes counts orphans too
            ref = l2["head_bytes"] + l2["blob_bytes"] - l2["orphan_bytes"] + l2["sidecar_bytes"]
            log("usage %s: %d B referenced (heads %d B, blobs %d B) against a budget of %s; "
                "orphans %d (%d B) beside" % (row["namespace"], ref, l2["head_bytes"],
                                              l2["blob_bytes"] - l2["orphan_bytes"],
                                              args.budget or "none", l2["orphans"],
                                              l2["orphan_bytes"]))
            # Every daemon was restarted with the whole bucket in view and evicted at open: a
            # namespace still over its budget means eviction did not hold it.
            if args.budget and ref > budget_bytes(args.budget):
                log("namespace %s is over its budget at the end: %d B > %d B" % (
                    row["namespace"], ref, budget_bytes(args.budget)))
                clean = False
    return clean


def budget_bytes(text):
    """--budget as the daemons read a size: digits, then K, M, G or T (binary), optionally with
    B or iB; None if it is not one."""
    m = re.fullmatch(r"(\d+)(?:([KMGT])(?:B|IB)?)?", text.strip().upper())
    if not m:
        return None
    return int(m.group(1)) << (10 * ("KMGT".index(m.group(2)) + 1) if m.group(2) else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--daemons", type=int, default=2, help="wombatkvd processes (default 2)")
    ap.add_argument("--writers", type=int, default=3, help="writer processes (default 3)")
    ap.add_argument("--minutes", type=float, default=5, help="how long writers and chaos run")
    ap.add_argument("--seed", type=int, default=1, help="seeds every random choice (default 1)")
    ap.add_argument("--budget", help="namespace byte budget (--namespace-max-bytes, e.g. 4M); "
                    "also turns on orphan GC. Default: none")
    ap.add_argument("--gc-interval", default="20s", help="with --budget (default 20s)")
    ap.add_argument("--gc-grace", default="60s", help="with --budget (default 60s)")
    ap.add_argument("--refresh", default="2s", help="daemons' --refresh-interval (default 2s)")
    ap.add_argument("--namespaces", type=int, default=2, help="writer i uses chaos<i %% N>")
    ap.add_argument("--block-bytes", type=int, default=16384, help="bytes per block (16384)")
    ap.add_argument("--system-blocks", type=int, default=4, help="shared system prompt blocks")
    ap.add_argument("--max-turns", type=int, default=8, help="turns per conversation, at most")
    ap.add_argument("--variants", type=int, default=4, help="byte variants a key may have")
    ap.add_argument("--variant-rate", type=float, default=0.1,
                    help="fraction of saves that re-save a shared key with other bytes (0.1)")
    ap.add_argument("--interval", type=float, nargs=2, default=[5, 20], metavar=("MIN", "MAX"),
                    help="seconds between chaos events (5 20)")
    ap.add_argument("--kill-fraction", type=float, default=0.5,
                    help="chaos events that SIGKILL+restart, the rest SIGSTOP/SIGCONT (0.5)")
    ap.add_argument("--max-stop", type=float, default=5, help="longest SIGSTOP, seconds (5)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build tree")
    ap.add_argument("--out", help="run directory (default /tmp/wombatkv-chaos-TIME-sSEED)")
    ap.add_argument("--s3-endpoint", help="use this S3 server instead of starting radosgw; keys "
                    "from WMBT_KV_S3_ACCESS_KEY / WMBT_KV_S3_SECRET_KEY")
    ap.add_argument("--s3-bucket", default="wombatkv-test", help="with --s3-endpoint")
    ap.add_argument("--s3-region", default="us-east-1", help="with --s3-endpoint")
    ap.add_argument("--keep-s3", action="store_true", help="leave a radosgw started here running")
    ap.add_argument("--writer-spec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.writer_spec:
        return writer_main(json.loads(args.writer_spec))
    if args.budget and budget_bytes(args.budget) is None:
        ap.error("--budget %r: give one size for every namespace: bytes, or a number with K, M, "
                 "G or T (e.g. 4M)" % args.budget)

    rng = random.Random(args.seed)
    run = time.strftime("%Y%m%d-%H%M%S") + "-s%d" % args.seed
    args.out = os.path.abspath(args.out or "/tmp/wombatkv-chaos-" + run)
    os.makedirs(args.out, exist_ok=True)
    _, Conn = binding(args.build)
    s3, started_s3 = s3_server(args)
    prefix = "chaos/" + run
    log("out %s; S3 %s bucket %s prefix %s; %d daemons, %d writers, %.1f min, budget %s, seed %d"
        % (args.out, s3["endpoint"], s3["bucket"], prefix, args.daemons, args.writers,
           args.minutes, args.budget or "none", args.seed))
    daemons = [Daemon(i, args, s3, prefix) for i in range(args.daemons)]
    writers, violations, audit_clean, failed_start, events = [], 0, False, 0, []
    try:
        for d in daemons:
            if not d.start():
                sys.exit("chaos: daemon %d did not start (%s): see %s" % (d.i, d.state, d.logpath))
            log("daemon %d on %s (http %d, pid %d)" % (d.i, d.addr, d.http, d.proc.pid))
        t0 = time.time()
        deadline = t0 + args.minutes * 60
        for i in range(args.writers):
            spec = dict(index=i, build=args.build, out=args.out, seed=args.seed,
                        addrs=[d.addr for d in daemons], deadline=deadline,
                        namespaces=args.namespaces, block_bytes=args.block_bytes,
                        system_blocks=args.system_blocks, max_turns=args.max_turns,
                        variants=args.variants, variant_rate=args.variant_rate,
                        status=os.path.join(args.out, "writer-%d.status" % i))
            env = {k: v for k, v in os.environ.items() if not k.startswith("WMBT_KV_")}
            env["WMBT_KV_REQUEST_TIMEOUT_MS"] = "30000"
            writers.append(subprocess.Popen([sys.executable, os.path.abspath(__file__),
                                             "--writer-spec", json.dumps(spec)], env=env))
        events = chaos_loop(args, daemons, writers, deadline, rng, t0)
        log("chaos over: bringing every daemon up, waiting for the writers")
        for d in daemons:
            d.signal(signal.SIGCONT)
            if d.proc.poll() is not None and not d.start():
                failed_start += 1
            d.state = "up" if d.proc.poll() is None else d.state
        for w in writers:
            try:
                w.wait(120)
            except subprocess.TimeoutExpired:
                log("writer pid %d still running 120 s after the deadline: killed" % w.pid)
                w.kill()
        tot = progress(args, daemons, events, t0)
        log("stopping every daemon cleanly, then starting them again")
        for d in daemons:
            log("daemon %d stopped: exit %s" % (d.i, d.stop()))
        for d in daemons:
            if not d.start():
                failed_start += 1
                log("daemon %d did not restart (%s): see %s" % (d.i, d.state, d.logpath))
        time.sleep(2)
        res, live_bad = final_check(args, daemons, Conn)
        violations = tot.get("violations", 0) + live_bad + sum(r["violations"] for r in res)
        for d in daemons:
            d.stop()
            with open(d.logpath, errors="replace") as f:
                text = f.read()
            num = lambda pat: sum(int(x) for x in re.findall(pat, text))
            log("daemon %d over the run (its log): %d starts, %d blocks evicted in %d passes, "
                "%d orphan blobs deleted by GC, %d warn and %d error lines" % (
                    d.i, text.count("=== chaos: start"), num(r"eviction pass: .*?, (\d+) blocks,"),
                    text.count("eviction pass:"), num(r"orphan GC: (\d+) blobs deleted"),
                    text.count("[warn]"), text.count("[error]")))
        audit_clean = audit(args, daemons, s3, prefix)
        summary = dict(acknowledged=res[0]["acknowledged"] if res else 0,
                       per_daemon=[{k: r[k] for k in ("present", "shortened", "evicted",
                                                      "unreadable", "violations")} for r in res],
                       turns=tot.get("turns", 0), blocks_checked=tot.get("checked_blocks", 0),
                       saves_failed=tot.get("failed", 0), errors=tot.get("errors", 0),
                       corruption_errors=tot.get("corruption_errors", 0),
                       variant_saves=tot.get("variant_saves", 0),
                       kills=events.count("kill"), stops=events.count("stop"),
                       violations=violations, audit_clean=audit_clean,
                       daemon_start_failures=failed_start + events.count("restart failed"))
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f)
        log("RESULT " + json.dumps(summary))
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
        for d in daemons:
            if d.proc and d.proc.poll() is None:
                d.stop()
        if started_s3 and not args.keep_s3:
            subprocess.run([os.path.join(ROOT, "scripts/s3-server.sh"), "stop", "radosgw"])
    ok = violations == 0 and audit_clean and failed_start == 0 and "restart failed" not in events
    log("PASS" if ok else "FAIL (see %s/violations.jsonl, audit-*.json)" % args.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
