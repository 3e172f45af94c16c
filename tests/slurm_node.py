"""A real single-node Slurm for the tests: munged, slurmctld and slurmd started as root with a minimal slurm.conf
for this host, a private munge key and socket, all in one temporary directory; `stop` ends the three daemons by pid."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _node_facts() -> tuple[int, int]:
    """(CPUs, RealMemory in MB) as slurmd sees this host."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30).stdout
    facts = dict(w.split("=", 1) for w in out.split() if "=" in w)
    return int(facts.get("CPUs", os.cpu_count() or 1)), int(facts.get("RealMemory", 1024))


class SlurmNode:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.procs: list[str] = []
        self.conf = self.root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    def why_not(self) -> str | None:
        for tool in ("munged", "slurmctld", "slurmd", "sbatch", "squeue"):
            if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
                return f"{tool} is not installed (make system-deps installs slurm-wlm and munge)"
        if os.geteuid() != 0:
            return f"slurmd must run as root to start jobs (this test runs as uid {os.geteuid()})"
        return None

    def start(self) -> None:
        r = self.root
        for d in ("state", "spool", "log", "munge"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "munge", 0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(128))
        os.chmod(key, 0o400)
        sock = r / "munge" / "munge.socket"
        self._run(["munged", "--force", f"--socket={sock}", f"--key-file={key}", f"--pid-file={r / 'munge' / 'munged.pid'}",
                   f"--log-file={r / 'log' / 'munged.log'}", f"--seed-file={r / 'munge' / 'seed'}"])
        host = socket.gethostname().split(".")[0]
        ctld, slurmd = _free_port(), _free_port()
        cpus, mem = _node_facts()
        self.conf.write_text(f"""ClusterName=s2stest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem} State=UNKNOWN
PartitionName=s2s Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        self._run(["slurmctld", "-f", str(self.conf)])
        self._run(["slurmd", "-f", str(self.conf)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=self.env, timeout=30)
            if out.returncode == 0 and out.stdout.strip() in {"idle", "mix", "alloc"}:
                return
            time.sleep(0.5)
        raise RuntimeError("Slurm did not come up in 60 s: " + self.logs())

    def _run(self, argv: list[str]) -> None:
        p = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:1])} failed ({p.returncode}): {p.stderr.strip()[-800:]} {self.logs()}")

    def logs(self) -> str:
        out = []
        for f in sorted((self.root / "log").glob("*.log")):
            out.append(f"--- {f.name}: " + f.read_text(errors="replace")[-1500:])
        return "\n".join(out)

    def stop(self) -> None:
        subprocess.run(["scancel", "--full", "-u", "root"], capture_output=True, env=self.env, timeout=30)
        for pidfile in (self.root / "slurmd.pid", self.root / "slurmctld.pid", self.root / "munge" / "munged.pid"):
            try:
                pid = int(pidfile.read_text().strip())
            except (OSError, ValueError):
                continue
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                continue
            for _ in range(50):
                if not _running(pid):
                    break
                time.sleep(0.1)


def _running(pid: int) -> bool:
    """`pid` runs (a zombie does not: the daemons' parent is the machine's init, which may reap them 2 s later; a
    signal-0 probe waited that long for each of the three)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rindex(")") + 2:].startswith(("Z", "X"))


if __name__ == "__main__":  # by hand: python tests/slurm_node.py DIR
    import sys
    n = SlurmNode(Path(sys.argv[1]))
    print(n.why_not())
    n.start()
    print(subprocess.run(["sinfo"], capture_output=True, text=True, env=n.env).stdout)
    out = subprocess.run(["srun", "-N1", "hostname"], capture_output=True, text=True, env=n.env, timeout=60)
    print(out.returncode, out.stdout, out.stderr)
    n.stop()
