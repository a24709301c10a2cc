"""Runs one rank script of the Python backend tests under a launcher and judges the job.

    run_case.py --python /usr/bin/python3 --launcher torchrun|braid-run|mpirun --braid-run PATH -n N
                [--expect-exit 0|nonzero] [--expect TEXT ...] script.py [args...]

Exit 77 (CTest's SKIP_RETURN_CODE) when that Python has no torch or the launcher is missing, so a
machine without Python torch skips these tests instead of failing them. Otherwise the job must
end as expected (0, or non-zero for a killed rank), every --expect text must appear in its
output (e.g. one "rank R: ok" per rank), and the job must finish within --limit seconds (a hang
is a failure, reported with the output so far)."""

import argparse
import os
import shutil
import socket
import subprocess
import sys

SKIP = 77


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launcher_command(args):
    if args.launcher == "braid-run":
        return [args.braid_run, "--grace", "20", "-n", str(args.n), args.python]
    if args.launcher == "mpirun":
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            print("mpirun not found: skipping")
            sys.exit(SKIP)
        # mpirun sets OMPI_COMM_WORLD_* (braid.torch maps them) but no store address: the
        # user exports one, as here. The port is free now; a race with another job is unlikely.
        root = ["--allow-run-as-root"] if os.getuid() == 0 else []
        return [mpirun, *root, "--oversubscribe", "-np", str(args.n), "-x", "MASTER_ADDR=127.0.0.1",
                "-x", f"MASTER_PORT={free_port()}", "-x", "PYTHONPATH", "-x", "PYTHONUNBUFFERED", args.python]
    torchrun = shutil.which("torchrun", path=os.path.dirname(args.python)) or shutil.which("torchrun")
    if torchrun is None:
        print("torchrun not found: skipping")
        sys.exit(SKIP)
    # --standalone: a free port per job (tests run in parallel). --redirects 1 --tee 1: torch
    # 1.13's torchrun under Python 3.11 crashes parsing its default "0" (Std.NONE is lost from
    # IntFlag iteration); "1" keeps stdout on the console.
    return [args.python, torchrun, "--standalone", "--nproc_per_node", str(args.n), "--redirects", "1", "--tee", "1"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--python", required=True)
    p.add_argument("--launcher", choices=["torchrun", "braid-run", "mpirun"], required=True)
    p.add_argument("--braid-run", default="braid-run")
    p.add_argument("-n", type=int, default=2)
    p.add_argument("--expect-exit", default="0")
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--limit", type=float, default=150)
    p.add_argument("script", nargs=argparse.REMAINDER)
    args = p.parse_args()
    if subprocess.run([args.python, "-c", "import torch.distributed"], capture_output=True).returncode != 0:
        print(f"{args.python} cannot import torch: skipping")
        return SKIP
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = launcher_command(args) + [os.path.join(here, args.script[0])] + args.script[1:]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH", "")]))
    print("+", " ".join(cmd), flush=True)
    try:
        job = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=args.limit, start_new_session=True)
    except subprocess.TimeoutExpired as e:
        print(e.stdout or "")
        print(f"FAILED: the job did not finish within {args.limit} s")
        return 1
    print(job.stdout)
    ok = job.returncode == 0 if args.expect_exit == "0" else job.returncode != 0
    if not ok:
        print(f"FAILED: exit code {job.returncode}, expected {args.expect_exit}")
        return 1
    missing = [text for text in args.expect if text not in job.stdout]
    if missing:
        print(f"FAILED: missing from the output: {missing}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
