"""Ranking benchmark of the offline scout: NDCG@10, Hit@1, Hit@5 beside rg and a plain BM25.

For each question in ndcg_questions.json (symbol, semantic and architecture questions over pinned
public repositories in several languages, labelled by reading the code: relevant files grade 2,
secondary files grade 1, and right `path:start-end` ranges for the where-is questions), three
systems rank the repository's files. That file is a DEVELOPMENT set: the ranking is tuned on it
(16 repositories, the `dev-*` questions in C#, Kotlin, Scala, Swift, PHP, Elixir, Bash and Lua);
figures on it say nothing about questions it was not tuned on.

- outrider's offline scout, launched through the Python API: files in the order of its evidence
  list (distinct), ranges from the evidence;
- `rg`: the question's keywords (stop words and question framing dropped), each counted with
  `rg --count-matches -i -w -F`; a file scores sum(count * idf) with idf = ln(1 + N / df) over the
  N files `rg --files` lists; its range is the first line holding its rarest keyword, +-5 lines;
- plain BM25 (written here, no package): every text file `rg --files` lists, cut into fixed
  50-line chunks, tokens = lowercase alphanumeric runs (no camelCase splitting, no stemming),
  k1 = 1.2, b = 0.75 over chunks; a file scores its best chunk, whose lines are its range.

Scores per system, overall and by query kind and by language: NDCG@10 (gain = grade, ideal DCG
from every labelled file), Hit@1 and Hit@5 (a relevant file at rank 1 / in the top 5), and for
where-is questions (symbol, semantic) the right range in the top 3 (one of the first 3 ranges
overlaps a right range). The scout's checkable statements are checked as in run.py.

Time: the scout runs in a fresh subprocess per repository with OUTRIDER_CACHE_DIR set to a new
empty directory; the first question there is "cold" (it pays for any index build), the others
"warm"; the subprocess's peak RSS (VmHWM) is reported. The baselines are timed per question (BM25's
index build separately). Then a scale check: one cold and two warm questions on a generated tree
of >= 10 000 files (copies of the repositories' files, as run.py makes it).

Repositories come from --repos DIR (DIR/<name> at the pinned commit), cloned from --mirrors DIR
when missing; nothing is downloaded. Every labelled file and range is checked against the pinned
commit before anything runs.

    python bench/scout/ndcg.py --repos /work/scout-repos --mirrors /work/.mirror
    python bench/scout/ndcg.py --quick

`--quick` (what `make bench-quick` runs) needs no repository: it runs every step above on the
tiny git repository and questions that run.py's `quick_fixture` makes in a temporary directory,
with a 40-file scale tree, and judges no figure; it still fails (exit 1) on a false statement.
Needs `rg` on PATH all the same (`make bench-quick` puts the venv's, from the `ripgrep` wheel,
first).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

KINDS = ("symbol", "semantic", "architecture")
WHERE_IS = ("symbol", "semantic")
TARGETS = {"ndcg": 0.80, "range3": 0.60, "warm_ms": 50.0, "cold_10k_s": 5.0}

# English stop words and the words developers frame a question with; neither names code.
STOP = set(
    """a an the and or but if then else of in on at to for from by with without into onto over under
    as is are was were be been being do does did done doing has have had having it its this that these
    those there their them they we you your our i me my he she his her not no nor so than too very can
    could should would will shall may might must also just only own same such both each few more most
    other some any all what which who whom whose where when why how up down out off again further once
    here about against between through during before after above below while until because
    file files code codebase repo repository project implement implements implemented implementation
    defined define defines definition find located location handle handled handles handling happen
    happens done get gets given use used uses using way place places part parts function functions
    method methods logic look looks lives live show tell explain see want need make makes made""".split()
)


def import_run() -> Any:
    """run.py (and outrider with it); the extension may be mid-rebuild, so retry a few times."""
    for attempt in range(4):
        try:
            import run

            return run
        except ImportError as e:
            if attempt == 3:
                print(f"error: cannot import outrider: {e}", file=sys.stderr)
                raise SystemExit(2) from None
            print(f"import failed ({e}); retrying in 60 s", file=sys.stderr)
            time.sleep(60)
    raise AssertionError


def keywords(question: str) -> list[str]:
    """The question's words that may name code: not stop words, not framing, 2+ characters."""
    out: list[str] = []
    for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", question):
        lw = w.lower()
        if len(lw) < 2 or lw in STOP or lw in out:
            continue
        out.append(lw)
    return out


def rg_files(root: pathlib.Path) -> list[str]:
    out = subprocess.run(
        ["rg", "--files"], cwd=root, capture_output=True, text=True, check=False
    ).stdout
    return sorted(line for line in out.splitlines() if line)


def read_text(path: pathlib.Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------- rg baseline


class RgBaseline:
    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self.n_files = len(rg_files(root))

    def rank(self, question: str) -> tuple[list[str], list[tuple[str, int, int]]]:
        kws = keywords(question)
        per_kw: dict[str, dict[str, int]] = {}
        for kw in kws:
            out = subprocess.run(
                ["rg", "--count-matches", "-i", "-w", "-F", "--no-messages", "-e", kw, "."],
                cwd=self.root,
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            counts: dict[str, int] = {}
            for line in out.splitlines():
                path, _, n = line.rpartition(":")
                if path and n.isdigit():
                    counts[path.removeprefix("./")] = int(n)
            per_kw[kw] = counts
        idf = {kw: math.log(1 + self.n_files / len(c)) for kw, c in per_kw.items() if c}
        score: dict[str, float] = collections.defaultdict(float)
        for kw, counts in per_kw.items():
            for path, n in counts.items():
                score[path] += n * idf[kw]
        files = sorted(score, key=lambda p: (-score[p], p))
        ranges = []
        for path in files[:3]:
            present = sorted((k for k in per_kw if path in per_kw[k]), key=lambda k: -idf[k])
            text = read_text(self.root / path) or ""
            rx = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(present[0])}(?![A-Za-z0-9_])", re.I)
            line = next(
                (i for i, t in enumerate(text.split("\n"), 1) if rx.search(t)),
                1,
            )
            ranges.append((path, max(1, line - 5), line + 5))
        return files, ranges


# ---------------------------------------------------------------------------- BM25 baseline

TOKEN = re.compile(r"[a-z0-9]+")
CHUNK_LINES = 50


class Bm25:
    k1 = 1.2
    b = 0.75

    def __init__(self, root: pathlib.Path) -> None:
        self.chunks: list[tuple[str, int, int]] = []
        lengths: list[int] = []
        postings: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        for rel in rg_files(root):
            text = read_text(root / rel)
            if text is None:
                continue
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()
            for start in range(0, max(len(lines), 1), CHUNK_LINES):
                body = "\n".join(lines[start : start + CHUNK_LINES]).lower()
                toks = TOKEN.findall(body)
                cid = len(self.chunks)
                self.chunks.append((rel, start + 1, min(start + CHUNK_LINES, max(len(lines), 1))))
                lengths.append(len(toks))
                for term, tf in collections.Counter(toks).items():
                    postings[term].append((cid, tf))
        self.postings = postings
        self.lengths = lengths
        self.avgdl = (sum(lengths) / len(lengths)) if lengths else 1.0

    def rank(self, question: str) -> tuple[list[str], list[tuple[str, int, int]]]:
        terms = [t for t in TOKEN.findall(question.lower()) if t not in STOP]
        n = len(self.chunks)
        score: dict[int, float] = collections.defaultdict(float)
        for term in dict.fromkeys(terms):
            plist = self.postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            for cid, tf in plist:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[cid] / self.avgdl)
                score[cid] += idf * tf * (self.k1 + 1) / (tf + norm)
        best: dict[str, tuple[float, int]] = {}
        for cid, s in score.items():
            path = self.chunks[cid][0]
            if path not in best or s > best[path][0]:
                best[path] = (s, cid)
        files = sorted(best, key=lambda p: (-best[p][0], p))
        return files, [self.chunks[best[p][1]] for p in files[:3]]


# ---------------------------------------------------------------------------- the scout


def child_main(root: str) -> None:
    """Runs in a fresh process: launch the scout on each question read from stdin, in order."""
    run = import_run()
    questions = json.loads(sys.stdin.read())
    out = []
    for q in questions:
        r, secs = run.launch(pathlib.Path(root), q)
        res = r.result
        out.append(
            {
                "secs": secs,
                "status": r.status,
                "evidence": list(res.evidence) if res else [],
                "summary": res.summary if res else "",
                "findings": list(res.findings) if res else [],
                "unresolved_questions": list(res.unresolved_questions) if res else [],
            }
        )
    hwm = 0
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    json.dump({"answers": out, "vmhwm_kib": hwm}, sys.stdout)


def scout_in_child(root: pathlib.Path, questions: list[str]) -> dict[str, Any]:
    cache = tempfile.mkdtemp(prefix="outrider-ndcg-cache-")
    try:
        env = dict(os.environ, OUTRIDER_CACHE_DIR=cache)
        proc = subprocess.run(
            [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", str(root)],
            input=json.dumps(questions),
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        print(f"error: the scout's subprocess on {root} failed:\n{proc.stderr}", file=sys.stderr)
        raise SystemExit(2)
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------- scoring


def distinct(paths: list[str]) -> list[str]:
    return list(dict.fromkeys(paths))


def ndcg10(files: list[str], grades: dict[str, int]) -> float:
    dcg = sum(grades.get(f, 0) / math.log2(i + 2) for i, f in enumerate(files[:10]))
    ideal = sorted(grades.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def score(
    q: dict[str, Any], files: list[str], ranges: list[tuple[str, int, int]], run: Any
) -> dict[str, Any]:
    grades = {f: 1 for f in q["secondary"]} | {f: 2 for f in q["relevant"]}
    out: dict[str, Any] = {
        "ndcg10": ndcg10(files, grades),
        "hit1": bool(files) and grades.get(files[0]) == 2,
        "hit5": any(grades.get(f) == 2 for f in files[:5]),
        "top": files[:5],
    }
    if q["kind"] in WHERE_IS:
        answers = [run.parse_range(a) for a in q["answers"]]
        out["range3"] = any(run.overlaps(e, a) for e in ranges[:3] for a in answers)
    return out


def validate(spec: dict[str, Any], repos: dict[str, pathlib.Path], run: Any) -> None:
    """Every labelled file exists at the pinned commit; every right range lies inside its file."""
    problems: list[str] = []
    seen: set[str] = set()
    for q in spec["questions"]:
        if q["repo"] not in repos:
            continue
        qid = q["id"]
        if qid in seen:
            problems.append(f"{qid}: duplicate id")
        seen.add(qid)
        if q["kind"] not in KINDS:
            problems.append(f"{qid}: kind {q['kind']!r} is not one of {', '.join(KINDS)}")
        if not q["relevant"]:
            problems.append(f"{qid}: no relevant file")
        if q["kind"] in WHERE_IS and not q["answers"]:
            problems.append(f"{qid}: a where-is question without right ranges")
        commit = spec["repos"][q["repo"]]["commit"]
        root = repos[q["repo"]]
        for path in [*q["relevant"], *q["secondary"]]:
            ok = subprocess.run(
                ["git", "cat-file", "-e", f"{commit}:{path}"], cwd=root, capture_output=True
            )
            if ok.returncode != 0:
                problems.append(f"{qid}: {path} does not exist at {commit[:10]}")
        labelled = set(q["relevant"]) | set(q["secondary"])
        for a in q["answers"]:
            r = run.parse_range(a)
            if r is None:
                problems.append(f"{qid}: answer {a!r} is not path:start-end")
                continue
            if r[0] not in labelled:
                problems.append(f"{qid}: answer {a} names a file not labelled relevant/secondary")
            text = read_text(root / r[0])
            n = len(text.splitlines()) if text is not None else 0
            if not (1 <= r[1] <= r[2] <= n):
                problems.append(f"{qid}: answer {a} is outside the file ({n} lines)")
    if problems:
        print("error: the question set does not match the pinned repositories:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        raise SystemExit(2)


def mean(xs: list[float]) -> float:
    return statistics.mean(xs) if xs else float("nan")


def ms(xs: list[float]) -> str:
    return f"{mean(xs) * 1000:.0f} / {max(xs) * 1000:.0f}" if xs else "-"


SYSTEMS = ("scout", "rg", "bm25")


def print_table(rows: list[dict[str, Any]], langs: list[str]) -> None:
    groups: list[tuple[str, list[dict[str, Any]]]] = [("overall", rows)]
    groups += [(k, [r for r in rows if r["kind"] == k]) for k in KINDS]
    groups += [(lang, [r for r in rows if r["language"] == lang]) for lang in langs]
    print(
        f"{'':<13}{'':>3}  {'NDCG@10':^17}  {'Hit@1':^14}  {'Hit@5':^14}  {'right range in top 3':^23}"
    )
    print(
        f"{'group':<13}{'n':>3}  {'scout':>5} {'rg':>5} {'bm25':>5}  {'scout':>5} {'rg':>3} {'bm25':>4}"
        f"  {'scout':>5} {'rg':>3} {'bm25':>4}  {'scout':>7} {'rg':>7} {'bm25':>7}"
    )
    for name, rs in groups:
        if not rs:
            continue
        nd = [mean([r[s]["ndcg10"] for r in rs]) for s in SYSTEMS]
        h1 = [sum(r[s]["hit1"] for r in rs) for s in SYSTEMS]
        h5 = [sum(r[s]["hit5"] for r in rs) for s in SYSTEMS]
        wi = [r for r in rs if r["kind"] in WHERE_IS]
        r3 = [f"{sum(r[s]['range3'] for r in wi)}/{len(wi)}" if wi else "-" for s in SYSTEMS]
        print(
            f"{name:<13}{len(rs):>3}  {nd[0]:>5.2f} {nd[1]:>5.2f} {nd[2]:>5.2f}  "
            f"{h1[0]:>5} {h1[1]:>3} {h1[2]:>4}  {h5[0]:>5} {h5[1]:>3} {h5[2]:>4}  "
            f"{r3[0]:>7} {r3[1]:>7} {r3[2]:>7}"
        )
    wi = [r for r in rows if r["kind"] in WHERE_IS]
    for s in SYSTEMS:
        if wi:
            share = sum(r[s]["range3"] for r in wi) / len(wi)
        else:
            share = float("nan")
        nd = mean([r[s]["ndcg10"] for r in rows])
        print(
            f"  {s:<6} NDCG@10 {nd:.3f} (target >= {TARGETS['ndcg']:.2f}), right range in top 3 "
            f"{share:.0%} of where-is (target >= {TARGETS['range3']:.0%})"
        )


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child_main(sys.argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--repos", type=pathlib.Path, help="checked-out repositories (required unless --quick)"
    )
    ap.add_argument("--mirrors", type=pathlib.Path, help="local git mirrors to clone from")
    ap.add_argument("--questions", type=pathlib.Path, default=HERE / "ndcg_questions.json")
    ap.add_argument("--only", help="comma-separated repositories to run")
    ap.add_argument("--ids", help="comma-separated question ids to run")
    ap.add_argument("--json", type=pathlib.Path, help="write every per-question result here")
    ap.add_argument("--no-scale", action="store_true", help="skip the >= 10 000-file tree")
    ap.add_argument("--big-files", type=int, default=10_000, help="files in the generated tree")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every question's ranks")
    ap.add_argument(
        "--quick", action="store_true", help="a tiny generated repository; judge no figure"
    )
    args = ap.parse_args()
    run = import_run()
    if args.quick:
        with tempfile.TemporaryDirectory(prefix="outrider-ndcg-quick-") as tmp:
            args.questions, args.repos = run.quick_fixture(pathlib.Path(tmp))
            args.mirrors, args.big_files = None, 40
            return bench(args, run)
    if args.repos is None:
        ap.error("--repos is required (or --quick)")
    return bench(args, run)


def bench(args: argparse.Namespace, run: Any) -> int:
    import outrider

    if shutil.which("rg") is None:
        run.fail("rg (ripgrep) is not on PATH; the baselines need it")
    spec = json.loads(args.questions.read_text())
    only = set(args.only.split(",")) if args.only else set(spec["repos"])
    unknown = only - set(spec["repos"])
    if unknown:
        run.fail(f"unknown repositories {sorted(unknown)}; known: {', '.join(spec['repos'])}")
    ids = set(args.ids.split(",")) if args.ids else None
    if ids is not None:
        missing = ids - {q["id"] for q in spec["questions"]}
        if missing:
            run.fail(f"unknown question ids: {', '.join(sorted(missing))}")
    wanted = [n for n in spec["repos"] if n in only]
    if ids is not None:
        wanted = [
            n for n in wanted if any(q["repo"] == n and q["id"] in ids for q in spec["questions"])
        ]
    repos = {
        n: run.ensure_repo(n, spec["repos"][n], args.repos.resolve(), args.mirrors) for n in wanted
    }
    validate(spec, repos, run)
    questions = [
        q for q in spec["questions"] if q["repo"] in repos and (ids is None or q["id"] in ids)
    ]
    print(
        f"outrider {outrider.__version__}; rg: "
        f"{subprocess.run(['rg', '--version'], capture_output=True, text=True).stdout.split(chr(10))[0]}; "
        f"{len(questions)} questions over {len(repos)} repositories"
    )

    rows: list[dict[str, Any]] = []
    timing: dict[str, dict[str, Any]] = {}
    for name, root in repos.items():
        rs = [q for q in questions if q["repo"] == name]
        lang = spec["repos"][name]["language"]
        tree = run.Tree(root)
        child = scout_in_child(root, [q["question"] for q in rs])
        t = time.perf_counter()
        rgb = RgBaseline(root)
        rg_setup = time.perf_counter() - t
        t = time.perf_counter()
        bm = Bm25(root)
        bm_build = time.perf_counter() - t
        timing[name] = {
            "language": lang,
            "files": len(tree.files),
            "scout_cold_s": child["answers"][0]["secs"],
            "scout_warm_s": [a["secs"] for a in child["answers"][1:]],
            "scout_vmhwm_mib": child["vmhwm_kib"] / 1024,
            "rg_setup_s": rg_setup,
            "bm25_build_s": bm_build,
            "bm25_chunks": len(bm.chunks),
        }
        for i, (q, ans) in enumerate(zip(rs, child["answers"], strict=True)):
            ev = [e for e in (run.parse_range(x) for x in ans["evidence"]) if e]
            s_files = distinct([e[0] for e in ev])
            result = types.SimpleNamespace(
                evidence=ans["evidence"],
                summary=ans["summary"],
                findings=ans["findings"],
                unresolved_questions=ans["unresolved_questions"],
            )
            checked, false, unchecked, bad = run.check_statements(tree, result)
            t = time.perf_counter()
            rg_files_, rg_ranges = rgb.rank(q["question"])
            rg_secs = time.perf_counter() - t
            t = time.perf_counter()
            bm_files, bm_ranges = bm.rank(q["question"])
            bm_secs = time.perf_counter() - t
            row = {
                "id": q["id"],
                "repo": name,
                "language": lang,
                "kind": q["kind"],
                "question": q["question"],
                "relevant": q["relevant"],
                "secondary": q["secondary"],
                "answers": q["answers"],
                "scout": score(q, s_files, ev, run)
                | {
                    "secs": ans["secs"],
                    "cold": i == 0,
                    "status": ans["status"],
                    "evidence": ans["evidence"],
                    "checked": checked,
                    "false": false,
                    "unchecked": unchecked,
                    "false_statements": bad,
                },
                "rg": score(q, rg_files_, rg_ranges, run)
                | {
                    "secs": rg_secs,
                    "keywords": keywords(q["question"]),
                    "ranges": [f"{p}:{a}-{b}" for p, a, b in rg_ranges],
                },
                "bm25": score(q, bm_files, bm_ranges, run)
                | {"secs": bm_secs, "ranges": [f"{p}:{a}-{b}" for p, a, b in bm_ranges]},
            }
            rows.append(row)
            if args.verbose:
                marks = " ".join(
                    f"{s}={row[s]['ndcg10']:.2f}{'*' if row[s].get('range3') else ''}"
                    for s in SYSTEMS
                )
                print(f"{q['id']:<11} {q['kind']:<12} {marks}  {q['question']}")
                print(f"      scout: {', '.join(ans['evidence'][:3])}")
                print(f"      want:  {', '.join(q['answers'] or q['relevant'][:3])}")
                for b in bad:
                    print(f"      FALSE: {b}")

    langs = list(dict.fromkeys(spec["repos"][n]["language"] for n in repos))
    print()
    print_table(rows, langs)
    false = sum(r["scout"]["false"] for r in rows)
    checked = sum(r["scout"]["checked"] for r in rows)
    unchecked = sum(r["scout"]["unchecked"] for r in rows)
    print(
        f"  scout false statements: {false} of {checked} checked ({unchecked} sentences "
        f"unchecked; target 0)"
    )
    print()
    print(
        f"{'repository':<10} {'language':<11} {'files':>5}  {'scout cold':>10}  "
        f"{'warm mean / max':>15}  {'peak RSS':>8}  {'rg mean / max':>13}  "
        f"{'bm25 build':>10}  {'bm25 q mean / max':>17}"
    )
    for name, t in timing.items():
        rr = [r for r in rows if r["repo"] == name]
        print(
            f"{name:<10} {t['language']:<11} {t['files']:>5}  {t['scout_cold_s'] * 1000:>7.0f} ms  "
            f"{ms(t['scout_warm_s']):>12} ms  {t['scout_vmhwm_mib']:>4.0f} MiB  "
            f"{ms([r['rg']['secs'] for r in rr]):>10} ms  {t['bm25_build_s']:>8.2f} s  "
            f"{ms([r['bm25']['secs'] for r in rr]):>14} ms"
        )
    cold = [t["scout_cold_s"] for t in timing.values()]
    warm = [s for t in timing.values() for s in t["scout_warm_s"]]
    print(
        f"scout: cold (first question of a fresh process) mean {mean(cold) * 1000:.0f} ms, max "
        f"{max(cold) * 1000:.0f} ms; warm mean {mean(warm) * 1000:.0f} ms, max "
        f"{(max(warm) if warm else float('nan')) * 1000:.0f} ms (target < {TARGETS['warm_ms']:.0f} ms); "
        f"peak RSS max {max(t['scout_vmhwm_mib'] for t in timing.values()):.0f} MiB"
    )

    scale: dict[str, Any] | None = None
    if not args.no_scale and args.big_files > 0:
        big = args.repos.resolve() / f"_big_{args.big_files}_{'_'.join(sorted(repos))}"
        total = run.make_big_tree(repos, big, args.big_files)
        qs = [questions[0]["question"], questions[-1]["question"], questions[0]["question"]]
        child = scout_in_child(big, qs)
        secs = [a["secs"] for a in child["answers"]]
        t = time.perf_counter()
        RgBaseline(big).rank(qs[0])
        rg_big = time.perf_counter() - t
        scale = {
            "root": str(big),
            "files": total,
            "questions": qs,
            "scout_secs": secs,
            "scout_vmhwm_mib": child["vmhwm_kib"] / 1024,
            "rg_secs": rg_big,
        }
        print(
            f"generated tree of {total} files ({big}): scout cold {secs[0]:.2f} s (target < "
            f"{TARGETS['cold_10k_s']:.0f} s), warm {secs[1] * 1000:.0f} ms and {secs[2] * 1000:.0f} ms "
            f"(the first question again), peak RSS {scale['scout_vmhwm_mib']:.0f} MiB; "
            f"rg baseline one question {rg_big * 1000:.0f} ms"
        )

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "outrider": outrider.__version__,
                    "date": time.strftime("%Y-%m-%d"),
                    "repos": {n: spec["repos"][n] | timing[n] for n in repos},
                    "questions": rows,
                    "scale": scale,
                },
                indent=1,
            )
        )
        print(f"per-question results written to {args.json}")
    if args.quick:
        if false:
            print(f"error: {false} false statement(s) by the scout", file=sys.stderr)
            return 1
        print("quick mode: statements checked, figures not judged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
