"""Every distribution builds with `uv build` and carries complete, consistent metadata."""

from __future__ import annotations

import tarfile
import zipfile
from email.message import Message
from importlib.metadata import Distribution, EntryPoint, PathDistribution
from pathlib import Path

import pytest
from packaging.metadata import Metadata
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

# Distribution name -> (package folder, import package).
DISTRIBUTIONS = {
    "memcore": ("packages/memcore", "memcore"),
    "memcore-sqlite": ("packages/adapter-sqlite", "memcore_sqlite"),
    "memcore-tablestore": ("packages/adapter-tablestore", "memcore_tablestore"),
    "memcore-hermes": ("packages/adapter-hermes", "memcore_hermes"),
    "memcore-cli": ("packages/adapter-cli", "memcore_cli"),
    "memcore-mcp": ("packages/adapter-mcp", "memcore_mcp"),
}
SUPPORTED = ("3.10", "3.11", "3.12", "3.13")
UNSUPPORTED = ("3.8", "3.9", "3.14")
REQUIRED_URLS = ("Homepage", "Documentation", "Source", "Issues", "Changelog")


def _wheel(dist_dir: Path, name: str) -> Path:
    stem = canonicalize_name(name).replace("-", "_")
    wheels = sorted(dist_dir.glob(f"{stem}-*.whl"))
    assert len(wheels) == 1, f"expected one wheel for {name}, found {wheels}"
    return wheels[0]


def _distribution(wheel: Path) -> Distribution:
    with zipfile.ZipFile(wheel) as zf:
        dist_info = next(
            n.split("/")[0] for n in zf.namelist() if n.split("/")[0].endswith(".dist-info")
        )
    return PathDistribution(zipfile.Path(wheel, f"{dist_info}/"))  # type: ignore[arg-type]


def _metadata(dist: Distribution) -> Message:
    return dist.metadata  # type: ignore[return-value]


@pytest.fixture(scope="module", params=sorted(DISTRIBUTIONS))
def built(request: pytest.FixtureRequest, built_dists: Path) -> tuple[str, Path, Distribution]:
    name: str = request.param
    wheel = _wheel(built_dists, name)
    return name, wheel, _distribution(wheel)


def test_release_the_distribution_list_matches_the_workspace_members(repo_root: Path) -> None:
    members = {
        p.parent.relative_to(repo_root).as_posix()
        for p in repo_root.glob("packages/*/pyproject.toml")
    }
    assert members == {folder for folder, _ in DISTRIBUTIONS.values()}


def test_release_wheel_is_named_and_versioned_like_the_workspace(
    built: tuple[str, Path, Distribution],
) -> None:
    name, wheel, dist = built
    meta = _metadata(dist)
    assert canonicalize_name(meta["Name"]) == name
    assert meta["Version"] == "0.1.0"
    assert wheel.name.endswith("-py3-none-any.whl"), "a pure-Python wheel works on every platform"
    summary = meta["Summary"] or ""
    assert len(summary) >= 20, f"{name} needs a real one-line description"
    assert meta["Author"] or meta["Author-email"], f"{name} has no author"
    assert meta["Keywords"], f"{name} has no keywords"


def test_release_wheel_metadata_passes_the_index_validation(
    built: tuple[str, Path, Distribution],
) -> None:
    """`packaging.metadata` validates core metadata the way twine and the index do."""
    _, _, dist = built
    raw = dist.read_text("METADATA")
    assert raw
    parsed = Metadata.from_email(raw, validate=True)
    assert parsed.license_expression == "MIT"
    assert parsed.requires_python is not None


def test_release_wheel_declares_the_mit_licence_and_ships_its_text(
    built: tuple[str, Path, Distribution], repo_root: Path
) -> None:
    name, wheel, dist = built
    meta = _metadata(dist)
    assert meta["License-Expression"] == "MIT"
    assert "LICENSE" in (meta.get_all("License-File") or [])
    # PEP 639: an upload that has both a licence expression and licence classifiers is refused.
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    with zipfile.ZipFile(wheel) as zf:
        shipped = [n for n in zf.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert shipped, f"{name} wheel does not ship the licence text"
        assert zf.read(shipped[0]).decode() == (repo_root / "LICENSE").read_text()


def test_release_python_versions_agree_between_requires_python_and_classifiers(
    built: tuple[str, Path, Distribution],
) -> None:
    _, _, dist = built
    meta = _metadata(dist)
    spec = SpecifierSet(meta["Requires-Python"])
    classifiers = set(meta.get_all("Classifier") or [])
    for version in SUPPORTED:
        assert spec.contains(version), f"Requires-Python {spec} excludes {version}"
        assert f"Programming Language :: Python :: {version}" in classifiers
    for version in UNSUPPORTED:
        assert not spec.contains(version), f"Requires-Python {spec} admits {version}"
        assert f"Programming Language :: Python :: {version}" not in classifiers
    assert "Programming Language :: Python :: 3 :: Only" in classifiers
    assert any(c.startswith("Development Status ::") for c in classifiers)
    assert any(c.startswith("Intended Audience ::") for c in classifiers)
    assert any(c.startswith("Topic ::") for c in classifiers)


def test_release_project_urls_are_complete_and_https(built: tuple[str, Path, Distribution]) -> None:
    name, _, dist = built
    urls = dict(
        (label.strip(), url.strip())
        for label, url in (
            entry.split(",", 1) for entry in _metadata(dist).get_all("Project-URL") or []
        )
    )
    missing = [label for label in REQUIRED_URLS if label not in urls]
    assert not missing, f"{name} lacks project URLs {missing}"
    assert all(url.startswith("https://") for url in urls.values()), urls
    assert urls["Changelog"].endswith("CHANGELOG.md")


def test_release_long_description_is_the_package_readme_in_markdown(
    built: tuple[str, Path, Distribution], repo_root: Path
) -> None:
    name, _, dist = built
    meta = _metadata(dist)
    assert meta["Description-Content-Type"] == "text/markdown"
    body = meta.get_payload()
    assert isinstance(body, str)
    readme = (repo_root / DISTRIBUTIONS[name][0] / "README.md").read_text()
    assert body.strip() == readme.strip()


def test_release_wheel_holds_its_typed_package_and_nothing_else(
    built: tuple[str, Path, Distribution],
) -> None:
    name, wheel, _ = built
    package = DISTRIBUTIONS[name][1]
    with zipfile.ZipFile(wheel) as zf:
        tops = {
            n.split("/")[0] for n in zf.namelist() if not n.split("/")[0].endswith(".dist-info")
        }
        assert tops == {package}, f"{name} wheel holds {tops}"
        assert f"{package}/__init__.py" in zf.namelist()
        assert f"{package}/py.typed" in zf.namelist(), "Typing :: Typed needs py.typed"
        assert not [n for n in zf.namelist() if "/tests/" in n or n.endswith(".pyc")]


def test_release_entry_points_name_modules_that_the_wheel_holds(
    built: tuple[str, Path, Distribution],
) -> None:
    name, wheel, dist = built
    expected: dict[str, set[tuple[str, str]]] = {
        "memcore-sqlite": {("memcore.backends", "local")},
        "memcore-tablestore": {("memcore.backends", "tablestore")},
        "memcore-cli": {("console_scripts", "memcore")},
    }
    eps: list[EntryPoint] = list(dist.entry_points)
    assert expected.get(name, set()) <= {(ep.group, ep.name) for ep in eps}
    with zipfile.ZipFile(wheel) as zf:
        files = set(zf.namelist())
    for ep in eps:
        module = ep.module.replace(".", "/")
        assert f"{module}.py" in files or f"{module}/__init__.py" in files, f"{ep} points nowhere"


def test_release_extras_keep_the_base_install_light(built: tuple[str, Path, Distribution]) -> None:
    name, _, dist = built
    meta = _metadata(dist)
    extras = set(meta.get_all("Provides-Extra") or [])
    requirements = [Requirement(r) for r in dist.requires or []]
    base = {canonicalize_name(r.name) for r in requirements if r.marker is None}
    heavy = {"numpy", "onnxruntime", "tokenizers", "torch"}
    assert not base & heavy, f"{name} pulls {base & heavy} into every install"
    if name == "memcore-sqlite":
        assert "semantic" in extras
        semantic = {
            canonicalize_name(r.name)
            for r in requirements
            if r.marker is not None and r.marker.evaluate({"extra": "semantic"})
        }
        assert {"numpy", "onnxruntime", "tokenizers"} <= semantic
    if name == "memcore-cli":
        assert "semantic" in extras
        assert any(
            canonicalize_name(r.name) == "memcore-sqlite" and r.extras == {"semantic"}
            for r in requirements
            if r.marker is not None and r.marker.evaluate({"extra": "semantic"})
        )
    if name == "memcore":
        assert "testing" in extras
    for extra in extras:
        assert any(
            r.marker is not None and r.marker.evaluate({"extra": extra}) for r in requirements
        ), f"extra {extra!r} of {name} installs nothing"


def test_release_wheel_depends_only_on_our_distributions_and_public_packages(
    built: tuple[str, Path, Distribution],
) -> None:
    name, _, dist = built
    ours = {canonicalize_name(n) for n in DISTRIBUTIONS}
    for raw in dist.requires or []:
        req = Requirement(raw)
        assert req.url is None, f"{name} depends on a direct URL: {raw}"
        assert canonicalize_name(req.name) != name, f"{name} depends on itself"
        if canonicalize_name(req.name) in ours:
            assert req.name in DISTRIBUTIONS


def test_release_sdist_holds_what_a_rebuild_needs(built_dists: Path) -> None:
    for name, (_, package) in DISTRIBUTIONS.items():
        stem = canonicalize_name(name).replace("-", "_")
        (sdist,) = built_dists.glob(f"{stem}-*.tar.gz")
        with tarfile.open(sdist) as tf:
            names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
        for needed in (
            "pyproject.toml",
            "README.md",
            "LICENSE",
            "PKG-INFO",
            f"src/{package}/__init__.py",
        ):
            assert needed in names, f"{sdist.name} lacks {needed}"
