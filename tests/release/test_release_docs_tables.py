"""The lists the docs give as complete are read from the code: the configuration table names
every config key with its default and every secret the hosts read, each exit-code list names
every exit code, the Hermes command lists every ``hermes tablestore-mem`` command, and every
environment variable memcore reads is documented. A key, code, command or variable added
without its line in the docs fails here, not in a user's hands."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import attrs
import pytest

from memcore.config import MemcoreConfig
from memcore.exit_codes import ExitCode

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
CLI_README = (REPO / "packages" / "adapter-cli" / "README.md").read_text(encoding="utf-8")
HERMES_README = (REPO / "packages" / "adapter-hermes" / "README.md").read_text(encoding="utf-8")

#: Environment variables the code reads: a string literal of one of these prefixes.
ENV_LITERAL = re.compile(r"""["']((?:MEMCORE|TABLESTORE_MEMORY|ALIBABA_CLOUD)_[A-Z0-9_]+)["']""")


def _section(markdown: str, heading: str) -> str:
    start = markdown.index(f"\n{heading}\n")
    level = heading.split()[0]
    end = re.search(rf"^#{{1,{len(level)}}} ", markdown[start + len(heading) + 2 :], re.M)
    return markdown[start : start + len(heading) + 2 + end.start()] if end else markdown[start:]


def _config_rows() -> dict[str, str]:
    """The configuration table of README.md: each backticked name of the first column, to
    its default column."""
    rows: dict[str, str] = {}
    for line in _section(README, "## Configuration").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("key", "---"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1]
    return rows


def _rendered(default: object) -> str:
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


def test_release_configuration_table_names_every_config_key_and_nothing_else() -> None:
    keys = {f.name for f in attrs.fields(MemcoreConfig)}
    documented = {name for name in _config_rows() if not name.isupper()}
    assert documented == keys, (
        f"missing from README's table: {sorted(keys - documented)}; "
        f"not a config key: {sorted(documented - keys)}"
    )


def test_release_configuration_table_gives_the_defaults_the_code_has() -> None:
    rows = _config_rows()
    for field in attrs.fields(MemcoreConfig):
        if field.default is None:  # chosen by the host or the session: said in words
            continue
        assert f"`{_rendered(field.default)}`" in rows[field.name], (
            f"{field.name}: README says {rows[field.name]!r}, the code {field.default!r}"
        )


def test_release_configuration_table_names_every_secret_the_hosts_read() -> None:
    from memcore_hermes.config.envfile import SECRET_VARS

    documented = {name for name in _config_rows() if name.isupper()}
    assert set(SECRET_VARS) <= documented, sorted(set(SECRET_VARS) - documented)


def _codes(text: str, marker: str) -> set[int]:
    """The exit codes a list such as ``0 ok, 1 unexpected, ... 130 interrupted`` names, from
    ``marker`` to the end of its sentence."""
    start = text.index(marker) + len(marker)
    rest = " ".join(text[start:].split())
    while True:  # asides, innermost first: "(a bad file, 3 in all)" names no code
        shorter = re.sub(r"\([^()]*\)", "", rest)
        if shorter == rest:
            break
        rest = shorter
    span = re.split(r"\.(?:\s|$)", rest, maxsplit=1)[0]
    return {int(n) for n in re.findall(r"(?<![\w.,])(\d{1,3}) [a-z]", span)}


def _help_text() -> str:
    from typer.testing import CliRunner

    from memcore_cli.app import app

    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_release_codes_reads_a_list_to_the_end_of_its_sentence() -> None:
    text = "Exit codes: 0 ok, 2 usage (a bad file, 3 in all), 130 interrupted. Then 4 more."
    assert _codes(text, "Exit codes:") == {0, 2, 130}


@pytest.mark.parametrize(
    ("doc", "marker", "with_ok"),
    [
        ("README.md", "and a distinct exit code:", True),
        ("README.md", "exits with the `memcore` CLI's codes:", False),
        ("packages/adapter-cli/README.md", "Exit codes:", True),
        ("memcore --help", "Exit codes:", True),
    ],
)
def test_release_every_exit_code_list_names_every_exit_code(
    doc: str, marker: str, with_ok: bool
) -> None:
    text = _help_text() if doc == "memcore --help" else (REPO / doc).read_text(encoding="utf-8")
    every = {int(code) for code in ExitCode}
    if not with_ok:  # a list of the failures only
        every.discard(int(ExitCode.OK))
    assert _codes(text, marker) == every, f"{doc}: {marker}"


def _hermes_commands() -> set[str]:
    from memcore_hermes.commands.cli import register_cli

    parser = argparse.ArgumentParser(prog="hermes tablestore-mem")
    register_cli(parser)
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(commands.choices)


def test_release_the_hermes_readme_lists_every_plugin_command() -> None:
    [row] = [ln for ln in HERMES_README.splitlines() if ln.startswith("| `commands/` |")]
    [listed] = re.findall(r"`hermes tablestore-mem ([a-z|-]+)`", row)
    assert set(listed.split("|")) == _hermes_commands()


def test_release_the_readme_names_every_plugin_command() -> None:
    section = _section(README, "## Hermes plugin")
    for command in sorted(_hermes_commands()):
        assert re.search(rf"`(?:hermes tablestore-mem )?{command}\b", section), command


def _variables_read() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(REPO.glob("packages/*/src/**/*.py")):
        for name in ENV_LITERAL.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, path)
    return found


def _docs() -> str:
    paths = [REPO / "README.md", *REPO.glob("packages/*/README.md"), *REPO.glob("docs/*.md")]
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(paths))


def _named(name: str, docs: str) -> bool:
    """``name`` in backticks (``MEMCORE_ONNX_QUANTIZE=0`` too), or as the short form of a list
    such as ``ALIBABA_CLOUD_ACCESS_KEY_ID``/``_SECRET``/``_SECURITY_TOKEN``."""
    if re.search(rf"`{name}[`=]", docs):
        return True
    for head, tails in re.findall(r"`([A-Z]+_[A-Z]+)_[A-Z0-9_]+`((?:/`_[A-Z0-9_]+`)+)", docs):
        if name.startswith(head) and any(name.endswith(t) for t in re.findall(r"`(_\w+)`", tails)):
            return True
    return False


def test_release_named_reads_backticks_and_the_short_form_of_a_list() -> None:
    docs = (
        "`ALIBABA_CLOUD_ACCESS_KEY_ID`/`_SECRET`/`_SECURITY_TOKEN`, `MEMCORE_HOME`, `MEMCORE_X=0`"
    )
    named = ("ALIBABA_CLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "MEMCORE_HOME")
    for name in (*named, "MEMCORE_X"):
        assert _named(name, docs), name
    assert not _named("MEMCORE_HOMES", docs)
    assert not _named("MEMCORE_SECRET", docs)


def test_release_every_environment_variable_the_code_reads_is_documented() -> None:
    read = _variables_read()
    assert {"MEMCORE_HOME", "TABLESTORE_MEMORY_AK", "MEMCORE_ONNX_THREADS"} <= set(read)
    docs = _docs()
    undocumented = {n: str(p.relative_to(REPO)) for n, p in read.items() if not _named(n, docs)}
    assert not undocumented, f"read by the code, named in no doc: {undocumented}"


#: Named in the docs but not memcore's: the MCP bridge example's own variable.
NOT_OURS = frozenset({"MEMCORE_AUTH"})


def test_release_every_environment_variable_the_docs_name_is_read() -> None:
    named = set(re.findall(r"\b((?:MEMCORE|TABLESTORE_MEMORY)_[A-Z0-9_]*[A-Z0-9])\b", _docs()))
    stale = named - set(_variables_read()) - NOT_OURS
    assert not stale, f"named in the docs, read by no code: {sorted(stale)}"


def test_release_the_readme_gives_every_hermes_tool_with_its_arguments() -> None:
    """The plugin's tools as the README lists them: every tool, every argument of its schema
    in order, an optional one marked ``?`` (it left out three arguments, and marked none of
    the optional ones before ``reference_time``)."""
    from memcore_hermes.session.tools import TOOL_SCHEMAS

    schemas = {
        s["name"]: [
            (arg, arg not in s["parameters"]["required"]) for arg in s["parameters"]["properties"]
        ]
        for s in TOOL_SCHEMAS
    }
    section = _section(README, "## Hermes plugin")
    start = section.index("- Tools:")
    paragraph = section[start : section.index("\n- ", start + 1)]
    documented = {
        name: [(a.strip().rstrip("?"), a.strip().endswith("?")) for a in args.split(",")]
        for name, args in re.findall(r"`(tablestore_\w+)\(([^)]*)\)`", paragraph)
    }
    assert documented == schemas


def _core_layers() -> list[str]:
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [
        c
        for c in pyproject["tool"]["importlinter"]["contracts"]
        if c["name"].startswith("The core's layers")
    ]
    return [m.strip() for layer in contract["layers"] for m in re.split(r"[:|]", layer)]


def test_release_the_core_layout_names_every_module_of_its_layers_contract() -> None:
    """The contract is exhaustive, so every module of the core has a layer; the core's README
    table and the architecture page's row name each one (they left out three)."""
    modules = _core_layers()
    assert {"service", "scope", "errors"} <= set(modules)
    core_readme = (REPO / "packages" / "memcore" / "README.md").read_text(encoding="utf-8")
    table = "\n".join(ln for ln in core_readme.splitlines() if ln.startswith("| "))
    [row] = [
        ln
        for ln in (REPO / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
        if ln.startswith("| The core's layers")
    ]
    for module in modules:
        assert re.search(rf"`{module}/?`", table), f"packages/memcore/README.md: {module}"
        assert f"`{module}`" in row, f"docs/architecture.md: {module}"


@pytest.mark.parametrize("doc", ["packages/adapter-sqlite/README.md", "docs/architecture.md"])
def test_release_the_sqlite_adapter_tables_name_every_folder_and_module(doc: str) -> None:
    """Every folder and top-level module of ``memcore_sqlite`` has its row (``emoji.py``,
    which both search signals import, had none)."""
    package = REPO / "packages" / "adapter-sqlite" / "src" / "memcore_sqlite"
    entries = {
        f"{p.name}/" if p.is_dir() else p.name
        for p in package.iterdir()
        if not p.name.startswith("_")
        and (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    }
    assert {"store.py", "search/"} <= entries
    text = (REPO / doc).read_text(encoding="utf-8")
    rows = "\n".join(ln.split("|")[1] for ln in text.splitlines() if ln.startswith("| `"))
    named = set(re.findall(r"`([\w.]+/?)`", rows))
    assert entries <= named, sorted(entries - named)
