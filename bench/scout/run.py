"""Benchmark of the offline scout: where-is questions over pinned open-source repositories.

For each question in questions.json the scout (no model) is launched on the repository through
the Python API, and its answer is scored:

- answered: one of the question's right ranges overlaps one of the top 3 evidence items;
- right file in top 5: one of the first 5 distinct evidence files holds a right range;
- false statements: the scout's sentences that a script can check against the tree (quoted
  lines, "defined at" claims, counts, "no line mentions") and that are not true; sentences it
  cannot check are counted as unchecked;
- time per question (mean and max).

It then times the scout on a generated tree of >= 10 000 files (copies of the same repositories'
files) and prints that figure too.

The repositories are taken from --repos DIR (DIR/<name>, checked out at the pinned commit). A
missing one is cloned from --mirrors DIR (a directory holding <owner>+<name>/repo git dirs, as
the project's fetch tool leaves them, or <name> git dirs); nothing is downloaded.

    python bench/scout/run.py --repos /work/scout-repos --mirrors /work/.mirror
    python bench/scout/run.py --quick

`--quick` (what `make bench-quick` runs) needs no repository: it makes a tiny git repository and
its questions in a temporary directory (`quick_fixture`, which `ndcg.py --quick` shares), runs
every step above on it with a 40-file generated tree, and judges no figure; it still fails (exit
1) on a false statement or a `failed` child.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import outrider

HERE = pathlib.Path(__file__).resolve().parent
EVIDENCE_RE = re.compile(r"^(.+):(\d+)(?:-(\d+))?$")


def fail(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)
    raise SystemExit(2)


def git(*args: str, cwd: pathlib.Path | None = None) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        fail(f"git {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout.strip()


def ensure_repo(
    name: str, spec: dict[str, Any], repos: pathlib.Path, mirrors: pathlib.Path | None
) -> pathlib.Path:
    """DIR/name at the pinned commit, cloned from a local mirror when missing."""
    dest = repos / name
    if not dest.exists():
        candidates = []
        if mirrors is not None:
            candidates = [
                mirrors / spec["mirror"] / "repo",
                mirrors / spec["mirror"],
                mirrors / name,
            ]
        source = next((c for c in candidates if c.is_dir()), None)
        if source is None:
            fail(
                f"repository '{name}' is not in {repos} and no local mirror was found "
                f"(looked in {', '.join(map(str, candidates)) or 'nothing: pass --mirrors DIR'}); "
                f"clone {spec['url']} into {dest} and check out {spec['commit']}"
            )
        repos.mkdir(parents=True, exist_ok=True)
        git("clone", "-q", str(source), str(dest))
    head = git("rev-parse", "HEAD", cwd=dest)
    if head != spec["commit"]:
        git("-c", "advice.detachedHead=false", "checkout", "-q", spec["commit"], cwd=dest)
    return dest


# The tiny repository of --quick: a few files in two languages, each question's answer read off
# the text below (line numbers count from 1).
QUICK_FILES = {
    "pkg/config.py": (
        '"""Settings."""\n'
        "\n"
        "import json\n"
        "\n"
        "\n"
        "def load_config(path):\n"
        '    """Read the JSON settings file at path."""\n'
        "    with open(path) as f:\n"
        "        return json.load(f)\n"
    ),
    "pkg/retry.py": (
        '"""Retries."""\n'
        "\n"
        "\n"
        "def backoff_delay(attempt, base=0.5):\n"
        '    """Seconds to wait before retry number attempt: doubles each time."""\n'
        "    return base * 2**attempt\n"
    ),
    "pkg/server.py": (
        '"""The request handler."""\n'
        "\n"
        "from pkg.config import load_config\n"
        "\n"
        "\n"
        "class Server:\n"
        "    def __init__(self, path):\n"
        "        self.settings = load_config(path)\n"
        "\n"
        "    def handle_request(self, request):\n"
        '        """Answer one incoming request."""\n'
        '        return {"status": 200, "body": request}\n'
    ),
    "cmd/main.go": (
        "package main\n"
        "\n"
        'import "flag"\n'
        "\n"
        "func parseFlags() string {\n"
        '\treturn *flag.String("config", "settings.json", "settings file")\n'
        "}\n"
    ),
    "README.md": "# tiny\n\nA server that loads its settings and retries with backoff.\n",
}
QUICK_QUESTIONS = [
    {
        "id": "tiny-01",
        "kind": "symbol",
        "question": "Where is `load_config` defined?",
        "relevant": ["pkg/config.py"],
        "secondary": ["pkg/server.py"],
        "answers": ["pkg/config.py:6-9"],
    },
    {
        "id": "tiny-02",
        "kind": "semantic",
        "question": "Where is the delay before the next retry computed?",
        "relevant": ["pkg/retry.py"],
        "secondary": [],
        "answers": ["pkg/retry.py:4-6"],
    },
    {
        "id": "tiny-03",
        "kind": "semantic",
        "question": "Where are the command-line flags parsed?",
        "relevant": ["cmd/main.go"],
        "secondary": [],
        "answers": ["cmd/main.go:5-7"],
    },
    {
        "id": "tiny-04",
        "kind": "architecture",
        "question": "Which files handle incoming requests?",
        "relevant": ["pkg/server.py"],
        "secondary": ["pkg/config.py"],
        "answers": [],
    },
]


def quick_fixture(base: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A tiny git repository under base/repos/tiny and a question file in both scripts' format
    (run.py reads id, repo, question, answers; ndcg.py also kind, relevant, secondary):
    (questions file, repositories directory)."""
    root = base / "repos" / "tiny"
    for rel, text in QUICK_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git("init", "-q", cwd=root)
    git("add", ".", cwd=root)
    who = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    git(*who, "commit", "-q", "-m", "tiny", cwd=root)
    spec = {
        "about": "generated by bench/scout/run.py's quick_fixture",
        "repos": {
            "tiny": {
                "url": str(root),
                "mirror": "tiny",
                "commit": git("rev-parse", "HEAD", cwd=root),
                "language": "Python",
            }
        },
        "questions": [{"repo": "tiny", **q} for q in QUICK_QUESTIONS],
    }
    questions = base / "questions.json"
    questions.write_text(json.dumps(spec, indent=1))
    return questions, base / "repos"


def tracked_files(root: pathlib.Path) -> list[str]:
    """The files the tools walk in a clean checkout: tracked, not hidden, not binary."""
    out = []
    for rel in git("ls-files", cwd=root).splitlines():
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        p = root / rel
        if not p.is_file() or p.is_symlink():
            continue
        out.append(rel)
    return out


class Tree:
    """Line access and whole-tree scans for checking the scout's statements."""

    def __init__(self, root: pathlib.Path, files: list[str] | None = None) -> None:
        self.root = root
        self.files = files if files is not None else tracked_files(root)
        self._lines: dict[str, list[str] | None] = {}

    def lines(self, rel: str) -> list[str] | None:
        if rel not in self._lines:
            try:
                data = (self.root / rel).read_bytes()
            except OSError:
                self._lines[rel] = None
            else:
                if b"\0" in data[:8192]:
                    self._lines[rel] = None
                else:
                    text = data.decode("utf-8", errors="replace")
                    self._lines[rel] = [line.rstrip("\r") for line in text.split("\n")]
                    if text.endswith("\n"):
                        self._lines[rel].pop()
        return self._lines[rel]

    def span(self, rel: str, start: int, end: int) -> str | None:
        """Lines start..end (1-based, inclusive), lowercased, or None if out of range."""
        body = self.lines(rel)
        if body is None or start < 1 or end > len(body) or start > end:
            return None
        return "\n".join(body[start - 1 : end]).lower()

    def count(self, pattern: str, source_only: bool = False) -> tuple[int, int]:
        """Matching lines and files for a case-insensitive regex over the tree."""
        rx = re.compile(pattern, re.IGNORECASE)
        lines = files = 0
        for rel in self.files:
            if source_only and rel.rsplit(".", 1)[-1] not in SOURCE_EXTS:
                continue
            body = self.lines(rel)
            if body is None:
                continue
            n = sum(1 for line in body if rx.search(line))
            if n:
                lines += n
                files += 1
        return lines, files


def parse_range(item: str) -> tuple[str, int, int] | None:
    m = EVIDENCE_RE.match(item.strip())
    if not m:
        return None
    start = int(m.group(2))
    end = int(m.group(3) or start)
    return m.group(1), start, end


def overlaps(a: tuple[str, int, int], b: tuple[str, int, int]) -> bool:
    return a[0] == b[0] and a[1] <= b[2] and b[1] <= a[2]


# The scout's checkable sentence forms (see src/llm/scout/answer.rs).
QUOTED_LINE = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+)(?:-(?P<end>\d+))?: (?P<what>.*)$")
DEFINED = re.compile(r"`(?P<name>[^`]+)` is defined at (?P<path>[^\s:]+):(?P<line>\d+)")
COUNT = re.compile(
    r"the search for /(?P<rx>.+)/(?P<source> in source files)? found (?P<lines>\d+) matching line\(s\) in (?P<files>\d+) file\(s\)",
    re.IGNORECASE,
)
# "Source files" are those of the scout's CODE_GLOB (src/llm/scout/search.rs).
SOURCE_EXTS = set(
    "py pyi rs go js jsx mjs ts tsx java kt scala c h cc cpp hpp cs rb php swift m lua ex exs hs ml dart zig sh vue svelte".split()
)
NO_LINE = re.compile(
    r"no line (?:in the repository )?(?:mentions|matches) /(?P<rx>(?:[^/\\]|\\.)+)/", re.IGNORECASE
)
CONTAIN = re.compile(
    r"^(?P<path>[^\s:]+):(?P<start>\d+)-(?P<end>\d+): .* Lines \d+-\d+ contain (?P<forms>'[^']+'(?:, '[^']+')*)\.$"
)
NOT_SEEN = re.compile(
    r"The best match (?P<path>[^\s:]+):(?P<start>\d+)(?:-(?P<end>\d+))? does not show every keyword of the question \(not seen there: (?P<words>[^)]+)\)"
)
NO_MENTION = re.compile(r"No line mentions '(?P<term>[^']+)'")
SHOWN_TEXT = re.compile(r"^(?:line reads |reads )?«(?P<text>.*)»")


def check_statements(tree: Tree, result: Any) -> tuple[int, int, int, list[str]]:
    """(checked, false, unchecked, what was false) over summary, findings and open questions."""
    checked = false = unchecked = 0
    bad: list[str] = []

    def verdict(ok: bool, sentence: str) -> None:
        nonlocal checked, false
        checked += 1
        if not ok:
            false += 1
            bad.append(sentence)

    for item in result.evidence:
        e = parse_range(item)
        verdict(e is not None and tree.span(e[0], e[1], e[2]) is not None, f"evidence {item}")
    sentences: list[str] = []
    for block in result.findings:
        # "Lines a-b contain ..." follows its finding's "path:a-b:" in the same block.
        for m in CONTAIN.finditer(block):
            text = tree.span(m["path"], int(m["start"]), int(m["end"]))
            verdict(
                text is not None and all(f.strip("'") in text for f in m["forms"].split(", ")),
                block,
            )
    for block in [result.summary, *result.findings, *result.unresolved_questions]:
        sentences.extend(s for s in re.split(r"(?<=[.;])\s+(?=[A-Z`/a-z])", block) if s.strip())
    for s in sentences:
        hit = False
        for m in DEFINED.finditer(s):
            hit = True
            body = tree.lines(m["path"])
            line = int(m["line"])
            verdict(body is not None and 0 < line <= len(body) and m["name"] in body[line - 1], s)
        for m in COUNT.finditer(s):
            hit = True
            pattern = m["rx"].replace("\\/", "/")
            lines, files = tree.count(pattern, source_only=bool(m["source"]))
            verdict((lines, files) == (int(m["lines"]), int(m["files"])), s)
        for m in NO_LINE.finditer(s):
            hit = True
            lines, _ = tree.count(m["rx"].replace("\\/", "/"))
            verdict(lines == 0, s)
        if re.match(r"Lines \d+-\d+ contain ", s):
            hit = True  # checked with its block above
        for m in NOT_SEEN.finditer(s):
            hit = True
            end = int(m["end"] or m["start"])
            text = tree.span(m["path"], int(m["start"]), end)
            # A word the scout did not see there cannot be there (its search form is a prefix of it).
            verdict(
                text is not None and not any(w.strip() in text for w in m["words"].split(",")), s
            )
        for m in NO_MENTION.finditer(s):
            hit = True
            lines, _ = tree.count(re.escape(m["term"]))
            verdict(lines == 0, s)
        q = QUOTED_LINE.match(s.strip())
        if q:
            shown = SHOWN_TEXT.match(q["what"])
            if shown:
                hit = True
                body = tree.lines(q["path"])
                line = int(q["line"])
                text = shown["text"].removesuffix("…").strip()
                ok = (
                    body is not None
                    and 0 < line <= len(body)
                    and body[line - 1].strip().startswith(text)
                )
                verdict(ok, s)
        if not hit:
            unchecked += 1
    return checked, false, unchecked, bad


def launch(root: pathlib.Path, question: str) -> tuple[Any, float]:
    launcher = outrider.SubagentLauncher(root, outrider.OfflineScout(), trace_dir=False)
    started = time.perf_counter()
    r = launcher.launch(outrider.SubagentRequest(task=question))
    return r, time.perf_counter() - started


def make_big_tree(repos: dict[str, pathlib.Path], dest: pathlib.Path, files: int) -> int:
    """Copies of the repositories' files under dest until it holds >= files files."""
    stamp = dest / ".stamp"
    if stamp.exists() and stamp.read_text() == str(files):
        return sum(1 for p in dest.rglob("*") if p.is_file() and p.name != ".stamp")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    sources = {name: tracked_files(root) for name, root in repos.items()}
    per_copy = sum(len(v) for v in sources.values())
    copies = -(-files // per_copy)
    total = 0
    for i in range(copies):
        for name, rels in sources.items():
            for rel in rels:
                target = dest / f"copy{i:02d}" / name / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(repos[name] / rel, target)
                total += 1
    stamp.write_text(str(files))
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--repos",
        type=pathlib.Path,
        help="directory with the checked-out repositories (required unless --quick)",
    )
    ap.add_argument(
        "--mirrors",
        type=pathlib.Path,
        help="directory of local git mirrors to clone missing repositories from",
    )
    ap.add_argument("--questions", type=pathlib.Path, default=HERE / "questions.json")
    ap.add_argument("--only", help="run only this repository's questions")
    ap.add_argument(
        "--big-files", type=int, default=10_000, help="files in the generated tree (0: skip)"
    )
    ap.add_argument("--verbose", "-v", action="store_true", help="print every question's outcome")
    ap.add_argument(
        "--quick", action="store_true", help="a tiny generated repository; judge no figure"
    )
    args = ap.parse_args()
    if args.quick:
        with tempfile.TemporaryDirectory(prefix="outrider-scout-quick-") as tmp:
            args.questions, args.repos = quick_fixture(pathlib.Path(tmp))
            args.mirrors, args.big_files = None, 40
            return bench(args)
    if args.repos is None:
        ap.error("--repos is required (or --quick)")
    return bench(args)


def bench(args: argparse.Namespace) -> int:
    spec = json.loads(args.questions.read_text())
    wanted = [n for n in spec["repos"] if args.only in (None, n)]
    if not wanted:
        fail(f"unknown repository {args.only!r}; known: {', '.join(spec['repos'])}")
    repos = {
        n: ensure_repo(n, spec["repos"][n], args.repos.resolve(), args.mirrors) for n in wanted
    }
    trees = {name: Tree(root) for name, root in repos.items()}
    questions = [q for q in spec["questions"] if args.only in (None, q["repo"])]

    rows = []
    for q in questions:
        r, secs = launch(repos[q["repo"]], q["question"])
        answers = [parse_range(a) for a in q["answers"]]
        if any(a is None for a in answers):
            fail(f"question {q['id']}: an answer is not path:start-end: {q['answers']}")
        evidence = [
            e for e in (parse_range(x) for x in (r.result.evidence if r.result else [])) if e
        ]
        top3 = evidence[:3]
        answered = any(overlaps(e, a) for e in top3 for a in answers)  # type: ignore[arg-type]
        files: list[str] = []
        for e in evidence:
            if e[0] not in files:
                files.append(e[0])
        file_top5 = any(a[0] in files[:5] for a in answers)  # type: ignore[index]
        checked = false = unchecked = 0
        bad: list[str] = []
        if r.result is not None:
            checked, false, unchecked, bad = check_statements(trees[q["repo"]], r.result)
        rows.append(
            {
                "id": q["id"],
                "answered": answered,
                "file_top5": file_top5,
                "secs": secs,
                "status": r.status,
                "reason": r.terminal_reason,
                "tokens": r.token_usage,
                "calls": r.model_calls,
                "checked": checked,
                "false": false,
                "unchecked": unchecked,
                "bad": bad,
                "evidence": [f"{p}:{s}-{e}" for p, s, e in evidence[:5]],
            }
        )
        if args.verbose:
            mark = "OK " if answered else ("f5 " if file_top5 else "-- ")
            print(f"{mark} {q['id']:<11} {secs * 1000:6.0f}ms {r.status:<9} {q['question']}")
            print(f"      got: {', '.join(rows[-1]['evidence'][:3])}")
            if not answered:
                print(f"      want: {', '.join(q['answers'])}")
            for b in bad:
                print(f"      FALSE: {b}")

    n = len(rows)
    answered = sum(r["answered"] for r in rows)
    top5 = sum(r["file_top5"] for r in rows)
    false = sum(r["false"] for r in rows)
    checked = sum(r["checked"] for r in rows)
    unchecked = sum(r["unchecked"] for r in rows)
    completed_wrong = sum(1 for r in rows if r["status"] == "completed" and not r["answered"])
    times = [r["secs"] for r in rows]
    print(
        f"outrider {outrider.__version__}: offline scout on {n} questions over {len(set(q['repo'] for q in questions))} repositories"
    )
    for name in sorted({q["repo"] for q in questions}):
        rr = [r for q, r in zip(questions, rows, strict=True) if q["repo"] == name]
        print(
            f"  {name:<8} ({spec['repos'][name]['language']}, {spec['repos'][name]['commit'][:10]}): "
            f"answered {sum(r['answered'] for r in rr)}/{len(rr)}, right file in top 5 {sum(r['file_top5'] for r in rr)}/{len(rr)}"
        )
    print(
        f"answered (right range in top 3 evidence): {answered}/{n} ({answered / n:.0%}; target >= 50%)"
    )
    print(f"right file in top 5:                      {top5}/{n} ({top5 / n:.0%}; target >= 70%)")
    print(
        f"false statements:                         {false} of {checked} checked ({unchecked} sentences unchecked; target 0)"
    )
    completed = sum(1 for r in rows if r["status"] == "completed")
    print(
        f"status completed:                         {completed} ({completed_wrong} of them on a wrong answer)"
    )
    reasons = sorted({r["reason"] for r in rows})
    print(
        f"budgets (explore: 12 steps, 32 000 tokens):  model calls max {max(r['calls'] for r in rows)}, "
        f"tokens mean {statistics.mean(r['tokens'] for r in rows):.0f} max {max(r['tokens'] for r in rows)}; "
        f"terminal reasons: {', '.join(reasons)}"
    )
    print(
        f"time per question:                        mean {statistics.mean(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"
    )

    if args.big_files > 0:
        big = args.repos.resolve() / f"_big_{args.big_files}_{'_'.join(sorted(repos))}"
        total = make_big_tree(repos, big, args.big_files)
        sample = questions[:: max(1, len(questions) // 8)][:8]
        secs = []
        for q in sample:
            _, s = launch(big, q["question"])
            secs.append(s)
        print(
            f"generated tree of {total} files ({big}): {len(sample)} questions, "
            f"mean {statistics.mean(secs) * 1000:.0f} ms, max {max(secs) * 1000:.0f} ms (target <= 1 s)"
        )
    if args.quick:
        failed = [r["id"] for r in rows if r["status"] == "failed"]
        if false or failed:
            print(f"error: {false} false statement(s); failed: {failed}", file=sys.stderr)
            return 1
        print("quick mode: statements checked, figures not judged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
