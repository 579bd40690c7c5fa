#!/usr/bin/env python3
"""The shipped monitoring files against a real tarry: promtool checks the alert rules and runs
their unit tests (alerts_test.yml), tarry's own /metrics passes `promtool check metrics`, and every
metric the dashboard and the rules use is one tarry exports.

usage: check_monitoring.py TARRY_BINARY REPO_ROOT
"""
import json, re, socket, subprocess, sys, time, urllib.request
from pathlib import Path

tarry, root = sys.argv[1], Path(sys.argv[2])
mon = root / "server" / "monitoring"
rules, dashboard = mon / "tarry-alerts.yml", mon / "tarry-dashboard.json"
failures = []

def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        failures.append(f"{' '.join(map(str, cmd))}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r

run(["promtool", "check", "rules", str(rules)])
run(["promtool", "test", "rules", "alerts_test.yml"], cwd=Path(__file__).parent)

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

port, admin, dead = free_port(), free_port(), free_port()
proc = subprocess.Popen([tarry, "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin}",
                         "--proxy", f"127.0.0.1:{dead}", "--workers", "1", "--log-level", "warn"])
try:
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{admin}/healthz", timeout=1); break
        except Exception:
            time.sleep(0.05)
    try:  # a proxied request to a server that is not there: a 502, counted
        urllib.request.urlopen(f"http://127.0.0.1:{port}/x", timeout=5)
    except Exception:
        pass
    text = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5).read().decode()
finally:
    proc.terminate(); proc.wait(10)

r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
    failures.append(f"promtool check metrics: exit {r.returncode}\n{r.stdout}{r.stderr}")
if 'tarry_responses_total{code="5xx"} 1' not in text:
    failures.append("the proxied 502 is not counted as 5xx")

exported = set(re.findall(r"^(tarry_[a-z_]+)", text, re.M))
used = set(re.findall(r"\b(tarry_[a-z_]+)", rules.read_text()))
for panel in json.loads(dashboard.read_text())["panels"]:
    for target in panel["targets"]:
        used |= set(re.findall(r"\b(tarry_[a-z_]+)", target["expr"]))
missing = sorted(used - exported)
if missing:
    failures.append("used by the dashboard or the rules but not exported: " + ", ".join(missing))
print(f"{len(used)} metrics used, all exported" if not missing else "")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
