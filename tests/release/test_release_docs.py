"""The English and Chinese READMEs keep one structure; CHANGELOG and LICENSE keep their forms;
every install command the docs show is one that the release tests run."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from pathlib import Path

import attrs
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
HEADING = re.compile(r"^(#{1,6})\s+\S")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


@attrs.frozen
class Outline:
    """What two translations must share: heading levels, code blocks verbatim, table shapes."""

    headings: tuple[int, ...]
    code_blocks: tuple[tuple[str, str], ...]
    tables: tuple[tuple[int, int], ...]


def outline(markdown: str) -> Outline:
    headings: list[int] = []
    blocks: list[tuple[str, str]] = []
    tables: list[tuple[int, int]] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            marker, info = fence.group(1), fence.group(2).strip()
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].startswith(marker):
                body.append(lines[i])
                i += 1
            blocks.append((info, "\n".join(body)))
        elif HEADING.match(line):
            headings.append(len(HEADING.match(line).group(1)))  # type: ignore[union-attr]
        elif (
            line.lstrip().startswith("|") and i + 1 < len(lines) and TABLE_RULE.match(lines[i + 1])
        ):
            columns = len(lines[i + 1].strip().strip("|").split("|"))
            rows = 0
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows += 1
                i += 1
            tables.append((rows, columns))
            continue
        i += 1
    return Outline(tuple(headings), tuple(blocks), tuple(tables))


def shell_lines(markdown: str) -> list[str]:
    """Every command line of the shell code blocks (comments and prompts stripped)."""
    out: list[str] = []
    for info, body in outline(markdown).code_blocks:
        kind = info.split()[:1]
        if kind not in (["bash"], ["sh"], ["shell"], ["console"]):
            continue
        for raw in body.splitlines():
            line = raw.strip()
            if kind == ["console"]:
                # A transcript: only the prompt lines are commands, the rest is output.
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if line and not line.startswith("#"):
                out.append(line)
    return out


@pytest.fixture(scope="module")
def readme(repo_root: Path) -> str:
    return (repo_root / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def readme_zh(repo_root: Path) -> str:
    return (repo_root / "README.zh-CN.md").read_text(encoding="utf-8")


def test_release_outline_reads_headings_code_and_tables() -> None:
    sample = "# T\n\n## A\n```bash\n# not a heading\nls\n```\n| a | b |\n| --- | --- |\n| 1 | 2 |\n### B\n"
    assert outline(sample) == Outline((1, 2, 3), (("bash", "# not a heading\nls"),), ((1, 2),))


def test_release_chinese_readme_has_the_english_headings_in_order(
    readme: str, readme_zh: str
) -> None:
    en, zh = outline(readme), outline(readme_zh)
    assert en.headings, "README.md has no headings"
    assert zh.headings == en.headings, (
        f"README.md heading levels {en.headings} != README.zh-CN.md {zh.headings}"
    )


def test_release_chinese_readme_copies_every_code_block_verbatim(
    readme: str, readme_zh: str
) -> None:
    en, zh = outline(readme), outline(readme_zh)
    assert len(zh.code_blocks) == len(en.code_blocks), (
        "the READMEs hold a different number of code blocks"
    )
    for n, (a, b) in enumerate(zip(en.code_blocks, zh.code_blocks, strict=True), start=1):
        assert a == b, f"code block {n} differs between README.md and README.zh-CN.md"


def test_release_chinese_readme_has_the_same_tables(readme: str, readme_zh: str) -> None:
    assert outline(readme_zh).tables == outline(readme).tables


def section_figures(markdown: str) -> list[Counter[str]]:
    """The numbers of each heading's prose (code blocks, code spans and link targets left
    out; thousands separators dropped), section by section."""
    sections: list[list[str]] = [[]]
    lines = iter(markdown.splitlines())
    for line in lines:
        fence = FENCE.match(line)
        if fence:
            for inner in lines:
                if inner.startswith(fence.group(1)):
                    break
        elif HEADING.match(line):
            sections.append([])
        else:
            sections[-1].append(line)
    figures = []
    for body in sections:
        prose = re.sub(r"`[^`]*`|\]\([^)]*\)", " ", "\n".join(body))
        prose = re.sub(r"(?<=\d)[,，](?=\d{3})", "", prose)
        figures.append(Counter(re.findall(r"\d+(?:\.\d+)?", prose)))
    return figures


def test_release_section_figures_skip_code_and_separators() -> None:
    sample = "# A\n4,096 and `7` in 2.5 s\n```\n9\n```\n## B\n[x](y1) 3\n"
    assert section_figures(sample) == [Counter(), Counter({"4096": 1, "2.5": 1}), Counter({"3": 1})]


def test_release_chinese_readme_gives_only_figures_the_english_one_gives(
    readme: str, readme_zh: str
) -> None:
    """A figure changed in one README and not the other (the Chinese one said the vectors
    rescored in float32, long after they were stored as float16) fails here: each section of
    the translation gives no number its English section does not."""
    en, zh = section_figures(readme), section_figures(readme_zh)
    assert len(en) == len(zh)
    for n, (a, b) in enumerate(zip(en, zh, strict=True)):
        assert not b - a, f"section {n} of README.zh-CN.md gives {dict(b - a)}, README.md does not"


def test_release_chinese_readme_is_written_in_chinese(readme_zh: str) -> None:
    prose = re.sub(r"```.*?```", "", readme_zh, flags=re.S)
    han = len(re.findall(r"[\u4e00-\u9fff]", prose))
    assert han > 300, "README.zh-CN.md reads as untranslated"
    assert "README.md" in readme_zh, "README.zh-CN.md should link back to the English README"


def test_release_changelog_follows_keep_a_changelog(repo_root: Path) -> None:
    text = (repo_root / "CHANGELOG.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "# Changelog"
    assert "keepachangelog.com" in text and "semver.org" in text
    releases = re.findall(r"^## \[(.+?)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$", text, flags=re.M)
    assert releases and releases[0][0] == "Unreleased", "the first section must be [Unreleased]"
    versions = [(v, d) for v, d in releases[1:]]
    assert versions, "no released version"
    for version, date in versions:
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{version} is not semver"
        assert date, f"[{version}] has no ISO date"
    # Every ## heading is a release heading, and every ### heading a Keep a Changelog type.
    h2 = re.findall(r"^## (.*)$", text, flags=re.M)
    assert len(h2) == len(releases), f"stray ## headings: {h2}"
    kinds = set(re.findall(r"^### (.*)$", text, flags=re.M))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds
    for version, _ in releases:
        assert re.search(rf"^\[{re.escape(version)}\]: https://\S+$", text, flags=re.M), (
            f"no link reference for [{version}]"
        )


def test_release_changelog_names_the_packaged_version(repo_root: Path) -> None:
    text = (repo_root / "CHANGELOG.md").read_text(encoding="utf-8")
    latest = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", text, flags=re.M)[0]
    for pyproject in sorted(repo_root.glob("packages/*/pyproject.toml")):
        version = re.search(r'^version = "([^"]+)"', pyproject.read_text(), flags=re.M)
        assert version and version.group(1) == latest, f"{pyproject} is not at {latest}"


def test_release_licence_is_mit(repo_root: Path) -> None:
    text = (repo_root / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 memcore developers" in text
    assert "Permission is hereby granted, free of charge, to any person obtaining a copy" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
    for copy in sorted(repo_root.glob("packages/*/LICENSE")):
        assert copy.read_text(encoding="utf-8") == text, f"{copy} differs from LICENSE"


# The install commands that the release tests run, as the docs may show them.
TESTED_PIP_INSTALLS = (
    frozenset({"./packages/memcore", "./packages/adapter-sqlite[semantic]"}),
    frozenset(
        {
            "./packages/adapter-cli",
            "./packages/memcore",
            "./packages/adapter-sqlite[semantic]",
            "./packages/adapter-tablestore",
        }
    ),
    frozenset(
        {
            "./packages/adapter-cli",
            "./packages/adapter-mcp",
            "./packages/memcore",
            "./packages/adapter-sqlite[semantic]",
            "./packages/adapter-tablestore",
        }
    ),
    frozenset({"uv"}),
)
TESTED_HERMES = (
    ("hermes", "plugins", "install"),
    ("hermes", "memory", "setup", "tablestore-mem"),
    ("hermes", "config", "set", "memory.provider", "tablestore-mem"),
    ("hermes", "memory", "status"),
)


def test_release_shell_lines_take_commands_not_transcript_output() -> None:
    sample = "```console\n$ pip install uv\nmemcore: error: 'x\n```\n```bash\nhermes memory status\n```\n"
    assert shell_lines(sample) == ["pip install uv", "hermes memory status"]


# pip/uv options that take a value, which is not an install target.
_VALUED_OPTIONS = frozenset(
    {"--python", "-p", "--target", "-t", "--index-url", "-i", "--extra-index-url", "--prefix"}
)


def pip_install_targets(words: list[str]) -> frozenset[str] | None:
    """The requirements of a `pip install` / `uv pip install` / `python -m pip install`."""
    for i, word in enumerate(words[:-1]):
        if (word == "pip" or word.endswith("/pip")) and words[i + 1] == "install":
            targets: set[str] = set()
            skip = False
            for arg in words[i + 2 :]:
                if skip:
                    skip = False
                elif arg.startswith("-"):
                    skip = arg in _VALUED_OPTIONS
                else:
                    targets.add(arg)
            return frozenset(targets)
    return None


def test_release_pip_install_targets_skip_options_and_their_values() -> None:
    words = shlex.split(
        "uv pip install --python /opt/h/bin/python -q 'attrs>=24' ./packages/memcore"
    )
    assert pip_install_targets(words) == {"attrs>=24", "./packages/memcore"}
    assert pip_install_targets(["uv", "sync"]) is None


def test_release_every_documented_install_command_is_a_tested_one(
    readme: str, repo_root: Path
) -> None:
    yaml = pytest.importorskip("yaml")  # PyYAML comes with hermes-agent (Python >= 3.11)
    manifest = yaml.safe_load((repo_root / "plugin.yaml").read_text(encoding="utf-8"))
    plugin_deps = {
        canonicalize_name(Requirement(r).name) for r in manifest.get("pip_dependencies", [])
    }
    untested: list[str] = []
    for line in shell_lines(readme):
        for command in re.split(r"&&|;", line):
            if "pip" not in command and not command.strip().startswith("hermes"):
                continue
            words = shlex.split(command, comments=True)
            targets = pip_install_targets(words)
            if targets is not None:
                as_plugin_deps = (
                    {canonicalize_name(Requirement(t).name) for t in targets}
                    if all(not t.startswith((".", "/", "~", "$")) for t in targets)
                    else set()
                )
                if targets not in TESTED_PIP_INSTALLS and as_plugin_deps != plugin_deps:
                    untested.append(command.strip())
            elif (
                words[:1] == ["hermes"]
                and words[1:2] in (["plugins"], ["memory"], ["config"])
                and not any(tuple(words[: len(t)]) == t for t in TESTED_HERMES)
            ):
                untested.append(command.strip())
    assert not untested, f"README shows install commands no release test runs: {untested}"


def test_release_no_doc_installs_a_memcore_distribution_from_the_index(repo_root: Path) -> None:
    """The distributions are not on the package index yet: `pip install memcore-sqlite` finds
    nothing. Every doc installs them from the clone's package folders."""
    docs = [
        repo_root / "README.md",
        repo_root / "after-install.md",
        *sorted(repo_root.glob("packages/*/README.md")),
        *sorted(repo_root.glob("docs/*.md")),
    ]
    from_index: list[str] = []
    for doc in docs:
        for line in shell_lines(doc.read_text(encoding="utf-8")):
            targets = pip_install_targets(shlex.split(line, comments=True)) or frozenset()
            for target in targets:
                if target.startswith((".", "/", "~", "$")):
                    continue
                if canonicalize_name(Requirement(target).name).startswith("memcore"):
                    from_index.append(f"{doc.relative_to(repo_root)}: {line}")
    assert not from_index, from_index


def _collected(repo_root: Path, *paths: str) -> int:
    """How many tests pytest collects from ``paths`` (the whole suite without any)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *paths],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    found = re.search(r"(\d+) tests? collected", done.stdout)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    return int(found.group(1))


def _documented(text: str, pattern: str) -> int:
    found = re.search(pattern, text)
    assert found, pattern
    return int(found.group(1).replace(",", ""))


def test_release_docs_give_the_test_counts_pytest_collects(readme: str, repo_root: Path) -> None:
    """The fast loop's and the whole suite's sizes, as the README and the core's README say
    them ("about": within 15%)."""
    core = _collected(repo_root, "tests/core", "tests/contract")
    core_readme = (repo_root / "packages" / "memcore" / "README.md").read_text(encoding="utf-8")
    for said in (
        _documented(readme, r"About ([\d,]+) tests"),
        _documented(core_readme, r"about ([\d,]+) tests"),
    ):
        assert abs(said - core) <= 0.15 * core, (said, core)
    whole = _collected(repo_root)
    said = _documented(readme, r"The whole suite holds ([\d,]+) tests")
    assert abs(said - whole) <= 0.15 * whole, (said, whole)


def test_release_backends_doc_gives_the_contract_suite_size(repo_root: Path) -> None:
    """docs/backends.md says how many tests the contract suite runs against one store
    ("about": within 15%)."""
    one_store = _collected(repo_root, "tests/contract/test_contract_fake.py::TestFakeContract")
    doc = (repo_root / "docs" / "backends.md").read_text(encoding="utf-8")
    said = _documented(doc, r"a pytest class of about ([\d,]+) tests")
    assert abs(said - one_store) <= 0.15 * one_store, (said, one_store)
