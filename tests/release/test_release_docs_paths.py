"""The contributor docs name only modules, classes and files that exist.

``docs/architecture.md`` and ``docs/backends.md`` walk through the code by name. A move or a
rename that forgets them fails here, naming the doc and the stale name:

- every dotted ``memcore...`` name imports, or is an attribute of a module that imports;
- every backticked ``Class.member`` is a class of ours that has that member;
- every path (``packages/...``, ``tests/...``, a backticked ``folder/`` or ``file.py``) and
  every relative Markdown link exists;
- every import contract in ``pyproject.toml`` is in ``docs/architecture.md``'s table, by name.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Every page under docs/: the contributor docs, the adapters' details, the measurements.
DOCS = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("docs/**/*.md"))

#: Dotted names of our packages, as prose and code write them.
DOTTED = re.compile(r"(?<![\w./-])(memcore(?:_[a-z]+)?(?:\.[A-Za-z_]\w*)+)")
#: Dotted ``memcore`` names that are not modules: the entry-point group.
NOT_MODULES = frozenset({"memcore.backends"})
#: A dotted name or a ``Name.member`` span with one of these endings is a file name.
FILE_ENDINGS = (".db", ".json", ".md", ".py", ".toml", ".yaml")
BACKTICKED = re.compile(r"`([^`\n]+)`")
MEMBER = re.compile(r"^([A-Z]\w*)\.([A-Za-z_]\w*)(?:\(\))?$")
#: A path a reader can open: from the repository root, or a folder or file of a package.
ROOTED = re.compile(r"(?<![\w./-])((?:packages|tests|benchmarks|docs|scripts)/[\w./-]*[\w/])")
FILE_OR_FOLDER = re.compile(r"^[\w.-]+(?:/[\w.-]+)*(?:/|\.(?:py|md|toml|yaml|json))$")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _package_roots(root: Path) -> list[Path]:
    """Where a short path may start: the root, or any folder of a package's sources or tests."""
    folders = [*root.glob("packages/*/src/**/"), *root.glob("tests/**/")]
    return [root, *sorted(p for p in folders if "__pycache__" not in p.parts)]


def _module_of(name: str) -> tuple[str, list[str]] | None:
    """The longest importable prefix of ``name`` and the attributes after it."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        try:
            spec = importlib.util.find_spec(candidate)
        except (ImportError, ValueError):  # a parent that is a module, not a package
            spec = None
        if spec is not None:
            return candidate, parts[i:]
    return None


def _sets_on_self(cls: type, attr: str) -> bool:
    """An attribute the constructor assigns (``self.add_text = writes.add_text``)."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return False
    return re.search(rf"\bself\.{re.escape(attr)}\s*[:=]", source) is not None


def dotted_problem(name: str) -> str | None:
    """Why ``name`` does not resolve, or None when it does."""
    found = _module_of(name)
    if found is None:
        return "no such module"
    module, attrs = found
    obj: object = importlib.import_module(module)
    for attr in attrs:
        if hasattr(obj, attr):
            obj = getattr(obj, attr)
        elif isinstance(obj, type) and _sets_on_self(obj, attr):
            return None  # an instance attribute: what it holds is not checked further
        else:
            return f"{module} has no {'.'.join(attrs)}"
    return None


@cache
def class_members(root: Path = ROOT) -> Mapping[str, frozenset[str]]:
    """Every class the packages and benchmarks define, with what its body defines or assigns
    to ``self`` (and inherits from a class of ours)."""
    members: dict[str, set[str]] = {}
    bases: dict[str, set[str]] = {}
    sources = [*root.glob("packages/*/src/**/*.py"), *root.glob("benchmarks/**/*.py")]
    for path in sorted(sources):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            names = members.setdefault(node.name, set())
            bases.setdefault(node.name, set()).update(
                b.id for b in node.bases if isinstance(b, ast.Name)
            )
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets if isinstance(t, ast.Name))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, ast.Store)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    names.add(sub.attr)

    def inherited(name: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        own = frozenset(members.get(name, ()))
        parents = bases.get(name, set()) - seen - {name}
        return own.union(*(inherited(p, seen | {name}) for p in parents))

    return {name: inherited(name) for name in members}


def _outside_fences(markdown: str) -> str:
    """The text without fenced code blocks' bodies (diagrams abbreviate names)."""
    kept: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line)
    return "\n".join(kept)


def stale_names(markdown: str, doc: Path, root: Path = ROOT) -> list[str]:
    """Every name in ``markdown`` (the text of ``doc``) that no longer exists."""
    problems: list[str] = []
    prose = _outside_fences(markdown)
    links = set(LINK.findall(prose))
    for name in sorted(set(DOTTED.findall(markdown)) - NOT_MODULES):
        if name.endswith(FILE_ENDINGS):
            continue
        why = dotted_problem(name)
        if why is not None:
            problems.append(f"{name}: {why}")
    classes = class_members(root)
    spans = BACKTICKED.findall(prose)
    for span in sorted(set(spans)):
        member = MEMBER.match(span.strip())
        if member is None or span.strip().endswith(FILE_ENDINGS):
            continue
        cls, attr = member.groups()
        if cls not in classes:
            problems.append(f"{span}: no class {cls} in packages/")
        elif attr not in classes[cls]:
            problems.append(f"{span}: {cls} has no {attr}")
    paths = set(ROOTED.findall(LINK.sub("]()", prose)))
    problems += [f"{p}: no such path" for p in sorted(paths) if not (root / p).exists()]
    bases = _package_roots(root)
    for span in sorted({s.strip() for s in spans} - paths):
        if FILE_OR_FOLDER.match(span) and not any((b / span).exists() for b in bases):
            problems.append(f"{span}: no such file or folder in the repository or a package")
    for target in sorted(links):
        if "://" not in target and not (doc.parent / target).exists():
            problems.append(f"{target}: the link leads nowhere")
    return problems


def _existing(docs: Iterable[str]) -> list[str]:
    return [d for d in docs if (ROOT / d).exists()]


def test_release_contributor_docs_exist() -> None:
    assert (ROOT / "docs/architecture.md").is_file()
    assert (ROOT / "docs/backends.md").is_file()


@pytest.mark.parametrize("doc", _existing(DOCS))
def test_release_docs_name_only_what_exists(doc: str) -> None:
    path = ROOT / doc
    problems = stale_names(path.read_text(encoding="utf-8"), path)
    assert not problems, f"{doc} names what no longer exists:\n" + "\n".join(problems)


def contract_names(pyproject: str) -> list[str]:
    """The ``name`` of every import-linter contract (read as text: no TOML parser on 3.10)."""
    _, _, contracts = pyproject.partition("[tool.importlinter]")
    return re.findall(r'^name = "(.+)"$', contracts, flags=re.MULTILINE)


def test_release_architecture_lists_every_import_contract() -> None:
    doc = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    names = contract_names((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert len(names) >= 10
    missing = [n for n in names if f"| {n.replace('|', chr(92) + '|')} |" not in doc]
    assert not missing, f"docs/architecture.md does not list these import contracts: {missing}"


def test_release_docs_check_finds_stale_names(tmp_path: Path) -> None:
    """The check itself fails on a moved module, a renamed member, a gone file and link."""
    doc = tmp_path / "docs" / "stale.md"
    doc.parent.mkdir()
    text = (
        "The store is `memcore_sqlite.plumbing.open_store` and ranks in"
        " memcore_sqlite.search.ranking.no_such_function; `MemoryService.no_such_method`,"
        " `NoSuchClass.search`, `packages/adapter-sqlite/src/memcore_sqlite/plumbing.py`,"
        " `quantize_v2.py` and [the old page](old.md).\n"
        "Still there: memcore.service.MemoryService.search, `MemoryService.search`,"
        " `packages/memcore`, `search/ranking.py`, memcore.backends.\n"
    )
    problems = stale_names(text, doc)
    assert [p.split(":")[0] for p in problems] == [
        "memcore_sqlite.plumbing.open_store",
        "memcore_sqlite.search.ranking.no_such_function",
        "MemoryService.no_such_method",
        "NoSuchClass.search",
        "packages/adapter-sqlite/src/memcore_sqlite/plumbing.py",
        "quantize_v2.py",
        "old.md",
    ]
