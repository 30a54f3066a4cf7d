"""The README and docs/: a user's guide that stays short, links that resolve,
a command tour that matches the CLI, and dated measurements.

These read the files as a user would follow them: a broken anchor, a command
renamed in the code but not in the table, or a number with no date and
commit fails here rather than in front of a reader."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from acltuner.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# [text](target): not images' alt text alone, not inside code spans
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`]*`")


def _prose(text: str) -> str:
    """The text outside fenced code blocks: a link-like string in a code
    example is not a link."""
    return _FENCE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation other than '-'
    and '_' dropped, each space a '-'."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in _prose(path.read_text()).splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _links(path: Path) -> list[str]:
    return [m.group(1) for m in _LINK.finditer(_CODE_SPAN.sub("", _prose(path.read_text())))]


def test_readme_is_a_short_guide():
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"


def test_quickstart_has_exactly_its_two_commands():
    text = README.read_text()
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    assert [c for c in commands if c] == ["bash scripts/quickstart.sh",
                                          ".venv/bin/python -m pytest -q"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page):
    bad = []
    links = _links(page)
    for target in links:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            bad.append(f"{target}: no file {dest.relative_to(ROOT)}")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not bad, f"{page.relative_to(ROOT)}: " + "; ".join(bad)


def test_the_readme_links_every_docs_page():
    linked = {(README.parent / t.partition("#")[0]).resolve()
              for t in _links(README) if t.startswith("docs/")}
    missing = [p.name for p in DOCS if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


def _leaf_commands(group: click.Group, path=()) -> set[tuple[str, ...]]:
    leaves = set()
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            leaves |= _leaf_commands(cmd, (*path, name))
        else:
            leaves.add((*path, name))
    return leaves


def _options(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params if isinstance(p, click.Option)
            for o in (*p.opts, *p.secondary_opts)}


def _command_table() -> list[str]:
    """The first cell of every row of the README's command table."""
    section = README.read_text().split("## Commands", 1)[1].split("\n## ", 1)[0]
    cells = []
    for line in section.splitlines():
        if line.startswith("| `"):
            cells.append(re.split(r"(?<!\\)\|", line)[1].replace("\\|", "|"))
    return cells


def _walk(words: list[str]) -> tuple[click.Command, tuple[str, ...], list[str]]:
    cmd, path = main, ()
    while isinstance(cmd, click.Group) and words and words[0] in cmd.commands:
        cmd, path = cmd.commands[words[0]], (*path, words[0])
        words = words[1:]
    return cmd, path, words


def test_every_command_in_the_table_exists_with_its_options():
    cells = _command_table()
    assert len(cells) >= 15, "the README's command table was not found"
    named, bad = set(), []
    for cell in cells:
        cmd = None
        for span in re.findall(r"`([^`]*)`", cell):
            words = span.split()
            if words[:1] == ["acltuner"]:
                words = words[1:]
            if words and not words[0].startswith("-"):
                cmd, path, rest = _walk(words)
                if not path or isinstance(cmd, click.Group):
                    bad.append(f"`{span}`: no such command")
                    continue
                named.add(path)
            elif cmd is None:
                bad.append(f"`{span}`: options before any command")
                continue
            else:
                rest = words
            for word in rest:
                opt = word.strip("[]").split("=")[0]
                if opt.startswith("-") and opt not in _options(cmd) | _options(main):
                    bad.append(f"`{span}`: {cmd.name} has no option {opt}")
    assert not bad, "; ".join(bad)
    missing = sorted(" ".join(p) for p in _leaf_commands(main) - named)
    assert not missing, f"commands the README's table does not show: {missing}"


def test_shell_completion_works_as_documented():
    text = README.read_text()
    assert 'eval "$(_ACLTUNER_COMPLETE=bash_source acltuner)"' in text
    env = {**os.environ, "_ACLTUNER_COMPLETE": "bash_source"}
    run_main = [sys.executable, "-c", "from acltuner.cli import main; main(prog_name='acltuner')"]
    source = subprocess.run(run_main, env=env, capture_output=True, text=True, timeout=60)
    assert "complete -o nosort -F _acltuner_completion acltuner" in source.stdout, source.stderr
    env = {**os.environ, "_ACLTUNER_COMPLETE": "bash_complete",
           "COMP_WORDS": "acltuner bench c", "COMP_CWORD": "2"}
    answer = subprocess.run(run_main, env=env, capture_output=True, text=True, timeout=60)
    assert answer.stdout.split() == ["plain,compare", "plain,conv"], answer.stderr


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def test_every_performance_section_says_when_and_at_which_commit():
    text = _prose((ROOT / "docs" / "performance.md").read_text())
    sections = re.split(r"^(#{2,3} .*)$", text, flags=re.M)
    headings = sections[1::2]
    assert len(headings) >= 20
    commits, bad = set(), []
    for heading, body in zip(headings, sections[2::2]):
        first = body.strip().split("\n\n")[0]
        hashes = re.findall(r"\b[0-9a-f]{7,40}\b", first)
        if not re.match(r"Measured \d{4}-\d\d-\d\d", first):
            bad.append(heading)
        elif not hashes:
            # a table whose rows each say when and where: "| ... | DATE, COMMIT | ..."
            rows = [r for r in body.splitlines()
                    if r.startswith("| ") and not r.startswith(("| ---", "| benchmark"))]
            dated = [re.search(r"\| (\d{4}-\d\d-\d\d), ([0-9a-f]{7,40})\b", r) for r in rows]
            if not rows or not all(dated):
                bad.append(heading)
            hashes = [d.group(2) for d in dated if d]
        commits.update(hashes)
    assert not bad, f"sections without 'Measured DATE at COMMIT' first: {bad}"
    try:
        git_ok = _git("rev-parse", "--is-shallow-repository").stdout.strip() == "false"
    except FileNotFoundError:
        git_ok = False
    if not git_ok:
        pytest.skip("no full git history to look the commits up in")
    unknown = [c for c in sorted(commits)
               if _git("rev-parse", "--verify", "--quiet", f"{c}^{{commit}}").returncode]
    assert not unknown, f"commits docs/performance.md names that git does not know: {unknown}"


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "performance.md"],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_commands_quoted_in_the_guide_take_the_options_shown(page):
    """`acltuner CMD ... --opt` anywhere in the guide names an option CMD has.
    performance.md is left out: its logs quote commands as they were run then."""
    bad, seen = [], 0
    for m in re.finditer(r"acltuner ((?:[a-z][\w-]* ?){1,2})([^`\n]*)", page.read_text()):
        cmd, path, _ = _walk(m.group(1).split())
        if not path:
            continue
        seen += 1
        for opt in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", m.group(2)):
            if opt not in _options(cmd) | _options(main):
                bad.append(f"`{m.group(0).strip()}`: {' '.join(path)} has no option {opt}")
    assert not bad, "; ".join(bad)
    if page == README:
        assert seen >= 20, "the README's commands were not found"
