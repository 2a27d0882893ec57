#!/usr/bin/env python3
"""Runs the correct client and each mistake against a fresh `harness up`, then
`harness verify --json`, and writes the raw outcome (first_try_raw.json) with a mechanical
pre-judgement; the final judgement in first_try.json is made by reading each cause.

  python3 run_round.py [--harness /tmp/verify-blind/harness] [--only NAME ...]
"""
import argparse, json, os, signal, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "sk-test-1"


def start(harness, workdir):
    ready = os.path.join(workdir, "stack.json")
    log = open(os.path.join(workdir, "up.log"), "w")
    p = subprocess.Popen([harness, "up", "--clock", "simulated", "--sim-start", "2026-03-02T12:00:00Z",
                          "--api-key", KEY + ":ci", "--port-base", "0", "--seed", "7",
                          "--ready-file", ready], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        if os.path.exists(ready) and os.path.getsize(ready) > 0:
            d = json.load(open(ready))
            return p, d["platform"]["url"], d["platform"]["org_id"], d["platform"]["workspace_id"]
        if p.poll() is not None:
            raise SystemExit("harness up exited: see %s" % log.name)
        time.sleep(0.1)
    p.terminate()
    raise SystemExit("harness up not ready")


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def run_one(harness, name, m, outdir):
    wd = tempfile.mkdtemp(prefix="r1-", dir=outdir)
    p, url, org, ws = start(harness, wd)
    try:
        cmd = [sys.executable, os.path.join(HERE, "client.py"), "--url", url, "--api-key", KEY,
               "--org", org, "--workspace", ws]
        if m:
            cmd += ["--mistake", m["name"]]
        c = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        open(os.path.join(wd, "client.log"), "w").write(c.stdout + c.stderr)
        rep = os.path.join(wd, "verify.json")
        v = subprocess.run([harness, "verify", "--url", url, "--api-key", KEY, "--json", rep]
                           + (m.get("verify_args", []) if m else []),
                           capture_output=True, text=True, timeout=120)
        open(os.path.join(wd, "verify.txt"), "w").write(v.stdout + v.stderr)
        report = json.load(open(rep)) if os.path.exists(rep) else None
        return c.returncode, v.returncode, report, wd, v.stdout
    finally:
        stop(p)


def check_for(report, m):
    checks = {c["id"]: c for c in report["checks"]}
    op = m["operation"]
    if m["expect"] == "warn":
        want = {"repeated_offset": "portability.repeated_query"}.get(m["name"], "portability.trailing_slash")
        return checks.get(want), [c for c in checks.values() if c["id"].endswith("." + op)]
    if op is None:
        return checks.get("routes.unknown"), []
    return next((c for c in checks.values() if c["id"].split(".", 1)[-1] == op), None), []


def prejudge(m, vrc, chk):
    if chk is None or chk.get("result") != "fail":
        return "missed"
    if m["expect"] == "fail" and vrc == 0:
        return "missed"
    if m["expect"] == "warn" and chk.get("severity") != "warning":
        return "wrong_cause"
    cause = (chk.get("evidence") or {}).get("cause") or ""
    msg = cause.split(" -> ", 1)[-1].lower()
    ok = any(s.lower() in msg for s in m["cause_should_say"])
    bad = any(s.lower() in msg for s in m.get("cause_must_not_say", []))
    return "caught" if ok and not bad else "wrong_cause"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", default="/tmp/verify-blind/harness")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--out", default=os.path.join(HERE, "first_try_raw.json"))
    ap.add_argument("--runs-dir", help="where each run's folder goes (default: a new temporary folder)")
    a = ap.parse_args()
    mistakes = json.load(open(os.path.join(HERE, "mistakes.json")))
    outdir = a.runs_dir or tempfile.mkdtemp(prefix="round1-")
    results = {"runs_dir": outdir}
    if not a.only:
        crc, vrc, rep, wd, text = run_one(a.harness, "correct", None, outdir)
        results["correct"] = {"client_exit": crc, "exit_code": vrc, "summary": rep and rep["summary"],
                              "figures": rep and rep["figures"], "dir": wd}
        print("correct: verify exit", vrc, rep and rep["summary"])
    out = []
    for m in mistakes:
        if a.only and m["name"] not in a.only:
            continue
        crc, vrc, rep, wd, text = run_one(a.harness, m["name"], m, outdir)
        chk, op_checks = check_for(rep, m) if rep else (None, [])
        failing = [c["id"] for c in (rep or {"checks": []})["checks"] if c["result"] == "fail"]
        r = {
            "name": m["name"],
            "exit_code": vrc,
            "client_exit": crc,
            "check": chk and chk["id"],
            "flagged_operation_failed": bool(chk and chk.get("result") == "fail"),
            "severity": chk and chk.get("severity"),
            "cause": chk and (chk.get("evidence") or {}).get("cause"),
            "operation_checks": [{"id": c["id"], "result": c["result"],
                                  "cause": (c.get("evidence") or {}).get("cause")} for c in op_checks],
            "failing_checks": failing,
            "notes": rep and rep.get("notes"),
            "prejudged": prejudge(m, vrc, chk),
            "dir": wd,
        }
        out.append(r)
        print("%-40s exit=%s %-12s %s" % (m["name"], vrc, r["prejudged"], (r["cause"] or "")[:150]))
    results["mistakes"] = out
    json.dump(results, open(a.out, "w"), indent=2, ensure_ascii=False)


if __name__ == "__main__":
    main()
