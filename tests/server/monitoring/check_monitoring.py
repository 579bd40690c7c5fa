#!/usr/bin/env python3
"""The shipped monitoring files against a real tarry: promtool checks the alert rules and runs
their unit tests (alerts_test.yml), tarry's own /metrics passes `promtool check metrics`, every
metric the dashboard and the rules use is one tarry exports, and the process_* series read sane
values (the start time is the process's, open descriptors follow open connections).

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

def sample(text, name):
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else float("nan")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

port, admin, dead = free_port(), free_port(), free_port()
spawned = time.time()
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
    ready = time.time()
    text = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5).read().decode()
    # 40 more connections held open: process_open_fds grows by as many (the worker accepts them
    # as it goes, so the scrape is repeated until it has).
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
    for _ in range(200):
        busy = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5).read().decode()
        if sample(busy, "process_open_fds") >= sample(text, "process_open_fds") + 40: break
        time.sleep(0.05)
    for s in held: s.close()
finally:
    proc.terminate(); proc.wait(10)

def check(ok, what):
    if not ok: failures.append(what)
opened, grown = sample(text, "process_open_fds"), sample(busy, "process_open_fds")
check(grown >= opened + 40, f"process_open_fds: {opened} then {grown} with 40 more connections")
check(0 < opened < sample(text, "process_max_fds"), "process_open_fds not below process_max_fds")
start = sample(text, "process_start_time_seconds")
check(spawned - 1 <= start <= ready + 1,
      f"process_start_time_seconds {start}: the process started between {spawned} and {ready}")
resident, virtual = sample(text, "process_resident_memory_bytes"), sample(text, "process_virtual_memory_bytes")
check(1 << 20 < resident < virtual, f"process memory: resident {resident}, virtual {virtual}")
check(0 <= sample(text, "process_cpu_seconds_total") < 60, "process_cpu_seconds_total")
for name in ("process_cpu_seconds_total", "process_open_fds", "process_max_fds",
             "process_virtual_memory_bytes", "process_resident_memory_bytes",
             "process_start_time_seconds"):  # as client_golang and prometheus_client write them
    check(f"# TYPE {name} {'counter' if name.endswith('_total') else 'gauge'}\n" in text,
          f"{name}: no TYPE line")

r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
    failures.append(f"promtool check metrics: exit {r.returncode}\n{r.stdout}{r.stderr}")
if 'tarry_responses_total{code="5xx"} 1' not in text:
    failures.append("the proxied 502 is not counted as 5xx")

metric = r"\b((?:tarry|process)_[a-z_]+)"
exported = set(re.findall(r"^" + metric[2:], text, re.M))
used = set(re.findall(metric, rules.read_text()))
for panel in json.loads(dashboard.read_text())["panels"]:
    for target in panel["targets"]:
        used |= set(re.findall(metric, target["expr"]))
missing = sorted(used - exported)
if missing:
    failures.append("used by the dashboard or the rules but not exported: " + ", ".join(missing))
print(f"{len(used)} metrics used, all exported" if not missing else "")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
