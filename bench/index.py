"""The code index at scale: cold build CPU and peak memory, warm Search latency, beside rg and BM25.

    python bench/index.py --repo PATH [--sizes 1500,10000,40000] [--rounds 5]
    python bench/index.py --quick

For each size, a tree of that many files is made from the checkout at `--repo` (its files, in a
fixed shuffled order, hard-linked under `--work`; copies of the whole set when the repository
has fewer files). Then, in a fresh process with an empty disk cache: the first Search (the cold
build; CPU seconds of the process and its peak RSS, VmHWM), and `--rounds` rounds of warm
Searches over the questions below (mean and max; the index is in memory and the tree unchanged,
so a Search must not walk it). Beside them, from the same run: `rg -l -i -w -F` over each
question's words (a subprocess, process start included) and a plain BM25 over 50-line blocks
(bench/scout/ndcg.py's; build time and query time in process). Targets (judged unless
`--quick`; exit 1 when one is missed): warm mean <= 10 ms at <= 2 000 files and <= 50 ms at
>= 30 000 files, no warm Search over 2 s, cold build < 5 s CPU and peak RSS < 200 MiB at 10 000
files. Build the release extension first for figures worth recording (`make dev` is a debug
build, several times slower).

`--quick` (run by `make bench-quick`): a generated tree of 300 files, two rounds; the same
checks run, no figure is judged.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent

QUESTIONS = [
    "where is the device tree parsed",
    "usb keyboard driver initialization",
    "how is the environment saved to flash",
    "ethernet phy reset",
    "parse command line arguments",
    "spi flash erase sector",
    "boot image header checksum",
    "serial console baud rate setup",
    "memory allocation failure handling",
    "gpio pin direction output",
]

WORD = re.compile(r"[A-Za-z0-9_]+")
STOP = {"where", "is", "the", "how", "to", "a", "of", "and"}


def child(root: str, rounds: int) -> None:
    """In a fresh process: the cold Search, then warm rounds; prints JSON."""
    import outrider

    def search(q: str) -> tuple[float, Any]:
        t = time.perf_counter()
        env = outrider.run_tool(root, "Search", {"query": q, "limit": 10}, timeout=60)
        return time.perf_counter() - t, env

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    c0 = cpu()
    cold, env = search(QUESTIONS[0])
    cold_cpu = cpu() - c0
    if env.get("status") not in ("success", "partial"):
        raise SystemExit(f"the cold Search failed: {env}")
    warm: list[float] = []
    for _ in range(rounds):
        for q in QUESTIONS:
            secs, env = search(q)
            if env.get("status") != "success":
                raise SystemExit(f"a warm Search failed: {env}")
            warm.append(secs)
    hwm = 0
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    json.dump(
        {"cold_s": cold, "cold_cpu_s": cold_cpu, "warm_s": warm, "vmhwm_mib": hwm / 1024},
        sys.stdout,
    )


def in_child(root: pathlib.Path, rounds: int) -> dict[str, Any]:
    cache = tempfile.mkdtemp(prefix="outrider-index-bench-cache-")
    try:
        proc = subprocess.run(
            [
                sys.executable,
                str(pathlib.Path(__file__).resolve()),
                "--child",
                str(root),
                str(rounds),
            ],
            capture_output=True,
            text=True,
            env=dict(os.environ, OUTRIDER_CACHE_DIR=cache),
            check=False,
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: the Search process on {root} failed:\n{proc.stderr}")
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def repo_files(repo: pathlib.Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            p = pathlib.Path(dirpath, f)
            if p.is_file() and not p.is_symlink():
                out.append(str(p.relative_to(repo)))
    out.sort()
    random.Random(35).shuffle(out)
    return out


def make_tree(repo: pathlib.Path, files: list[str], dest: pathlib.Path, n: int) -> int:
    """`n` of the repository's files hard-linked (copied across file systems) under dest."""
    if dest.exists():
        shutil.rmtree(dest)
    made = 0
    copy = 0
    while made < n:
        for rel in files:
            if made >= n:
                break
            target = dest / (f"copy{copy:02d}" if copy else "") / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(repo / rel, target)
            except OSError:
                shutil.copyfile(repo / rel, target)
            made += 1
        copy += 1
    # The repository's ignore files apply to what it ignores, nothing more.
    return made


def generated(dest: pathlib.Path, n: int) -> None:
    words = [q.split() for q in QUESTIONS]
    for i in range(n):
        ws = words[i % len(words)]
        body = "".join(
            f"int {ws[j % len(ws)]}_{ws[(j + 1) % len(ws)]}_{i}_{j}(int x) {{\n    return x + {j};\n}}\n\n"
            for j in range(8)
        )
        p = dest / f"d{i % 17}" / f"e{i % 5}" / f"f{i}.c"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)


def rg_times(root: pathlib.Path) -> list[float]:
    rg = shutil.which("rg") or str(pathlib.Path(sys.executable).parent / "rg")
    if not pathlib.Path(rg).exists():
        raise SystemExit(
            "error: rg (ripgrep) is not on PATH: `apt-get install ripgrep` or `pip install ripgrep`"
        )
    out = []
    for q in QUESTIONS:
        words = [w for w in WORD.findall(q.lower()) if w not in STOP]
        cmd = [rg, "-l", "-i", "-w", "-F", "--no-messages"]
        for w in words:
            cmd += ["-e", w]
        t = time.perf_counter()
        subprocess.run([*cmd, "."], cwd=root, capture_output=True, check=False)
        out.append(time.perf_counter() - t)
    return out


def bm25_times(root: pathlib.Path) -> tuple[float, list[float]]:
    sys.path.insert(0, str(HERE / "scout"))
    from ndcg import Bm25

    t = time.perf_counter()
    bm = Bm25(root)
    build = time.perf_counter() - t
    out = []
    for q in QUESTIONS:
        t = time.perf_counter()
        bm.rank(q)
        out.append(time.perf_counter() - t)
    return build, out


def ms(xs: list[float]) -> str:
    return f"{statistics.mean(xs) * 1000:7.1f} / {max(xs) * 1000:7.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=pathlib.Path, help="a checked-out repository (unless --quick)")
    ap.add_argument("--sizes", default="1500,10000,40000", help="tree sizes in files")
    ap.add_argument("--rounds", type=int, default=5, help="warm rounds over the questions")
    ap.add_argument("--work", type=pathlib.Path, help="where the trees are made (a temp dir)")
    ap.add_argument("--no-bm25", action="store_true", help="skip the BM25 baseline")
    ap.add_argument("--json", type=pathlib.Path, help="also write the figures here")
    ap.add_argument("--quick", action="store_true", help="a small generated tree; judge nothing")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    # The venv's rg (the ripgrep wheel) first, as `make bench-quick` has it.
    os.environ["PATH"] = (
        f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    if not args.quick and args.repo is None:
        ap.error("--repo is required (or --quick)")
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be whole numbers separated by commas, not {args.sizes!r}")
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, not {args.rounds}")
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="outrider-index-bench-"))
    rows: list[dict[str, Any]] = []
    try:
        if args.quick:
            plan = [("generated", 300)]
            rounds = 2
        else:
            files = repo_files(args.repo)
            plan = [("repo", n) for n in sizes]
            rounds = args.rounds
        for kind, n in plan:
            root = work / f"tree_{n}"
            if kind == "generated":
                generated(root, n)
            else:
                n = make_tree(args.repo, files, root, n)
            r = in_child(root, rounds)
            rg = rg_times(root)
            bm_build, bm = (0.0, [0.0]) if args.no_bm25 else bm25_times(root)
            rows.append({"files": n, **r, "rg_s": rg, "bm25_build_s": bm_build, "bm25_s": bm})
            shutil.rmtree(root, ignore_errors=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"{'files':>7}  {'cold wall':>9}  {'cold CPU':>8}  {'peak RSS':>8}  "
        f"{'warm mean / max ms':>19}  {'rg mean / max ms':>17}  {'bm25 build':>10}  {'bm25 mean / max ms':>18}"
    )
    for r in rows:
        print(
            f"{r['files']:>7}  {r['cold_s']:>8.2f}s  {r['cold_cpu_s']:>7.2f}s  {r['vmhwm_mib']:>5.0f} MiB  "
            f"{ms(r['warm_s']):>19}  {ms(r['rg_s']):>17}  {r['bm25_build_s']:>9.2f}s  {ms(r['bm25_s']):>18}"
        )
    missed = []
    for r in rows:
        worst = max(r["warm_s"])
        if worst > 2.0:
            missed.append(f"a warm Search took {worst:.2f} s at {r['files']} files (target <= 2 s)")
        mean_ms = statistics.mean(r["warm_s"]) * 1000
        if r["files"] <= 2_000 and mean_ms > 10:
            missed.append(f"warm mean {mean_ms:.1f} ms at {r['files']} files (target <= 10 ms)")
        if r["files"] >= 30_000 and mean_ms > 50:
            missed.append(f"warm mean {mean_ms:.1f} ms at {r['files']} files (target <= 50 ms)")
        if 9_000 <= r["files"] <= 11_000:
            if r["cold_cpu_s"] >= 5:
                missed.append(
                    f"cold build {r['cold_cpu_s']:.2f} s CPU at {r['files']} files (target < 5 s)"
                )
            if r["vmhwm_mib"] >= 200:
                missed.append(
                    f"peak RSS {r['vmhwm_mib']:.0f} MiB at {r['files']} files (target < 200 MiB)"
                )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.quick:
        print("quick: figures not judged")
        return 0
    for m in missed:
        print(f"MISSED: {m}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
