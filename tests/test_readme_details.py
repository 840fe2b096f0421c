"""What the README tells a new user before the first command finishes (#37.9, #37.11): how long
the first install compiles and how to watch it, what `make test` installs, that `path/to/repo`
is theirs to fill in, and install commands that work from a checkout."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INTRO = README.split("\n## ", 1)[0]
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
EXTRAS = set(
    re.findall(
        r"^([a-z-]+) = \[",
        PYPROJECT.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0],
        re.M,
    )
)


def test_the_first_two_commands_stay_at_the_top() -> None:
    block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert block is not None and README.index(block.group(0)) < README.index("\n## ")
    lines = block.group(1).splitlines()
    assert lines[0].endswith(
        'pip install . && outrider explore "Where is the completion gate feedback built?"'
    )
    assert lines[1] == "make test"


def test_the_intro_says_how_long_the_first_install_takes_and_how_to_watch_it() -> None:
    assert "5 to 16 minutes" in INTRO
    assert "`pip install -v .`" in INTRO


def test_the_intro_says_what_make_test_installs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    block = re.search(r"^INTEGRATIONS := (.*?)\n(?=\S|\n)", makefile, re.S | re.M)
    assert block is not None
    pinned = re.findall(r'"([A-Za-z0-9_.-]+)==[^"]+"', block.group(1))
    assert len(pinned) == len(set(pinned)) and "ray" in pinned
    assert f"the {len(pinned)} integration packages" in INTRO
    assert "Ray" in INTRO.split("`make test` installs", 1)[1]


def test_path_to_repo_is_explained_before_its_first_use() -> None:
    first = README.index("path/to/repo")
    assert first < README.index("\n## ")
    sentence = README[first - 200 : first + 200]
    assert "put the path of your repository there" in sentence and "`.`" in sentence


def test_install_commands_name_extras_that_exist_and_work_from_a_checkout() -> None:
    # Not on a package index: only the one sentence saying so may write outrider[...].
    assert re.findall(r"pip install '?outrider\[", README) == ["pip install 'outrider["]
    assert "cannot work" in README.split("pip install 'outrider[", 1)[1][:40]
    named = set(re.findall(r"'\.\[([a-z-]+)\]'", README))
    named |= {e for group in re.findall(r"'\.\[([a-z,-]+)\]'", README) for e in group.split(",")}
    assert named and named <= EXTRAS, named - EXTRAS
    install = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    listed = set(
        re.findall(r"`([a-z-]+)`", install.split("The extras:", 1)[1].split(". A message")[0])
    )
    assert EXTRAS - {"test", "lint"} <= listed, (EXTRAS - {"test", "lint"}) - listed
    ray = README.split("**On an existing Ray cluster**", 1)[1][:120]
    assert "pip install '.[ray]'" in ray
