"""The hexagon is checked, not trusted: import contracts and a clean core import."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_CORE = [
    "memcore_sqlite",
    "memcore_tablestore",
    "memcore_hermes",
    "memcore_cli",
    "tablestore",
    "alibabacloud_credentials",
    "alibabacloud_tablestore20201209",
    "typer",
    "rich",
    "sqlite3",
    "urllib3",
    "aiohttp",
    "http.client",
    "numpy",
    "agent",
    "hermes_cli",
]


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.fail("lint-imports is not installed; run `uv sync --all-packages`")
    proc = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


@pytest.mark.parametrize(
    "package",
    [
        "memcore",
        "memcore_sqlite",
        "memcore_tablestore",
        "memcore_hermes",
        "memcore_cli",
        "memcore_mcp",
    ],
)
def test_no_package_has_an_import_cycle(package: str) -> None:
    """The layers contracts order each package's folders; this also covers the modules that
    share a layer and those inside one folder. A package's own ``__init__`` is left out: its
    lazy re-exports are for type checkers only."""
    grimp = pytest.importorskip("grimp")  # import-linter's own graph library

    graph = grimp.build_graph(package)
    cycles = sorted(
        (importer, imported)
        for importer in graph.modules
        if importer != package
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported != package and graph.chain_exists(importer=imported, imported=importer)
    )
    assert cycles == []


def test_importing_the_core_loads_no_adapter_sdk_or_io_library() -> None:
    code = (
        "import sys, json, memcore, memcore.testing, memcore.testing.contract;"
        f"print(json.dumps([m for m in {FORBIDDEN_IN_CORE!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_repo_root_holds_only_the_plugin_shims() -> None:
    assert sorted(p.name for p in ROOT.glob("*.py")) in (
        [],
        ["__init__.py"],
        ["__init__.py", "cli.py"],
    )


def test_every_public_name_of_the_package_resolves_to_its_module() -> None:
    import importlib

    import memcore

    assert sorted(memcore.__all__) == sorted(memcore._EXPORTS)
    for name in memcore.__all__:
        module, attribute = memcore._EXPORTS[name]
        assert getattr(memcore, name) is getattr(importlib.import_module(module), attribute)
    with pytest.raises(AttributeError):
        memcore.NoSuchName  # noqa: B018


def test_the_type_checkers_names_are_the_runtime_names() -> None:
    """``memcore/__init__.py`` states its public names twice: imports for type checkers
    (which do not run ``__getattr__``) and ``_FROM`` for the lazy runtime; they must agree."""
    import ast

    import memcore

    tree = ast.parse(Path(memcore.__file__).read_text(encoding="utf-8"))
    [block] = [n for n in tree.body if isinstance(n, ast.If)]
    static: dict[str, tuple[str, str]] = {}
    for node in block.body:
        if isinstance(node, ast.ImportFrom) and node.module != "memcore":
            for alias in node.names:
                static[alias.asname or alias.name] = (str(node.module), alias.name)
        elif isinstance(node, ast.Assign):  # MemoryUnit = _values.MemoryRecord
            [target] = node.targets
            assert isinstance(target, ast.Name) and isinstance(node.value, ast.Attribute)
            static[target.id] = ("memcore.values", node.value.attr)
    assert static == memcore._EXPORTS


def test_the_errors_module_loads_without_the_rest_of_the_core() -> None:
    """Hosts catch ``memcore.errors`` everywhere; importing it must not pull in cattrs."""
    code = (
        "import sys, json, memcore.errors;"
        "print(json.dumps(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('attrs', 'attr', 'cattrs') or m.startswith('memcore.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["memcore.errors"]
