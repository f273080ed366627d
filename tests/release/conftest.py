"""Fixtures for the release tests: fresh virtualenvs, wheel builds and a git copy of the tree.

These tests run the documented install paths for real, so they shell out to `uv`, `pip`,
`git` and `hermes`. Only the package index is reached over the network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

DISTRIBUTIONS: Mapping[str, str] = {
    "memcore": "packages/memcore",
    "memcore-sqlite": "packages/adapter-sqlite",
    "memcore-tablestore": "packages/adapter-tablestore",
    "memcore-hermes": "packages/adapter-hermes",
    "memcore-cli": "packages/adapter-cli",
    "memcore-mcp": "packages/adapter-mcp",
}

# Variables that would leak the developer's environment into a "fresh machine" run.
_SCRUBBED_PREFIXES = (
    "MEMCORE_",
    "HERMES_",
    "TABLESTORE_",
    "ALIBABA_CLOUD_",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "UV_PROJECT_ENVIRONMENT",
    "CONDA_PREFIX",
)

# Files and folders of the working tree that a clone of the repository never holds.
_NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".import_linter_cache",
    "dist",
    "build",
    "*.egg-info",
)


@attrs.frozen
class Run:
    """The outcome of one command, with everything needed to explain a failure."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def explain(self) -> str:
        return (
            f"$ {' '.join(self.args)}\nexit {self.returncode}\n"
            f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-4000:]}"
        )

    def check(self) -> Run:
        assert self.returncode == 0, self.explain()
        return self


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without project, memory or cloud settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 110.0,
    stdin: str | None = None,
) -> Run:
    """Run a command to completion; stdin is closed (or fed ``stdin``) so nothing can prompt."""
    argv = tuple(str(a) for a in args)
    proc = subprocess.run(
        argv,
        cwd=cwd or REPO_ROOT,
        env=dict(env) if env is not None else clean_env(),
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(argv, proc.returncode, proc.stdout, proc.stderr)


def uv_executable() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        pytest.fail("uv is required for the release tests (`pip install uv`)")
    return uv


@attrs.frozen
class Venv:
    """A fresh virtualenv made by ``uv venv`` from this interpreter's Python."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def env(self, **extra: str) -> dict[str, str]:
        env = clean_env(**extra)
        env["VIRTUAL_ENV"] = str(self.root)
        env["PATH"] = f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env

    def pip_install(self, *requirements: str | os.PathLike[str], timeout: float = 110.0) -> Run:
        """``pip install`` with the venv's own pip, exactly as the docs tell a user to."""
        return run(
            [self.python, "-m", "pip", "install", "--quiet", *requirements],
            env=self.env(),
            timeout=timeout,
        ).check()

    def uv_pip_install(
        self,
        *requirements: str | os.PathLike[str],
        pip_semantics: bool = False,
        timeout: float = 110.0,
    ) -> Run:
        """``uv pip install``; ``pip_semantics`` ignores ``[tool.uv.sources]`` as pip does, so
        workspace dependencies come only from the paths given, never as editable members."""
        flags = ["--no-sources"] if pip_semantics else []
        return run(
            [
                uv_executable(),
                "pip",
                "install",
                "--quiet",
                *flags,
                "--python",
                self.python,
                *requirements,
            ],
            env=self.env(),
            timeout=timeout,
        ).check()

    def python_run(self, code: str, *, env: Mapping[str, str], timeout: float = 60.0) -> Run:
        return run([self.python, "-c", code], env=env, timeout=timeout)


def make_venv(root: Path, *, seed: bool = False, python: str | None = None) -> Venv:
    """Create a venv from ``python`` (default: the running one, 3.11 in CI); ``seed`` adds pip."""
    args = [uv_executable(), "venv", "--quiet", "--python", python or sys.executable]
    if seed:
        args.append("--seed")
    run([*args, root], env=clean_env(), timeout=60).check()
    return Venv(root)


def copy_tree_as_cloned(dest: Path) -> Path:
    """Copy the working tree as a fresh clone would hold it (no venv, caches or git dir)."""
    shutil.copytree(REPO_ROOT, dest, ignore=_NOT_IN_A_CLONE, symlinks=True)
    return dest


def commit_tree(repo: Path) -> str:
    """Turn ``repo`` into a git repository with one commit of everything not git-ignored."""
    git = shutil.which("git")
    if not git:
        pytest.fail("git is required for the git-URL install test")
    env = clean_env(
        GIT_AUTHOR_NAME="memcore release test",
        GIT_AUTHOR_EMAIL="release@memcore.invalid",
        GIT_COMMITTER_NAME="memcore release test",
        GIT_COMMITTER_EMAIL="release@memcore.invalid",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
    )
    run([git, "init", "--quiet", "--initial-branch=main", repo], env=env).check()
    run([git, "-C", repo, "add", "--all"], env=env).check()
    run(
        [git, "-C", repo, "commit", "--quiet", "--no-gpg-sign", "-m", "release test"], env=env
    ).check()
    return run([git, "-C", repo, "rev-parse", "HEAD"], env=env).check().stdout.strip()


def find_interpreter(version: str) -> str | None:
    """A working local ``python<version>`` (PATH, pyenv, system), or None; never downloads one."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{version}")]
    candidates += [str(p) for p in sorted(pyenv.glob(f"versions/{version}.*/bin/python{version}"))]
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for candidate in candidates:
        if not candidate or not Path(candidate).is_file():
            continue
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            env=clean_env(),
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


@pytest.fixture(scope="session")
def interpreter() -> Callable[[str], str | None]:
    """``interpreter("3.10")``: a local interpreter of that version, or None."""
    return find_interpreter


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def run_command() -> Callable[..., Run]:
    return run


@pytest.fixture(scope="session")
def environment() -> Callable[..., dict[str, str]]:
    """``environment(**extra)``: a scrubbed copy of the environment for child processes."""
    return clean_env


@pytest.fixture(scope="session")
def new_venv() -> Callable[..., Venv]:
    """``new_venv(path, seed=False)``: create a fresh virtualenv."""
    return make_venv


@pytest.fixture(scope="session")
def cloned_tree() -> Callable[[Path], Path]:
    """``cloned_tree(dest)``: copy the working tree as a clone holds it."""
    return copy_tree_as_cloned


@pytest.fixture(scope="session")
def built_dists(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every distribution built by ``uv build`` (sdist, then a wheel from that sdist)."""
    out = tmp_path_factory.mktemp("dist")
    for name in DISTRIBUTIONS:
        run(
            [uv_executable(), "build", "--quiet", "--package", name, "--out-dir", out], timeout=110
        ).check()
    yield out


HERMES_AGENT = "hermes-agent==0.19.0"


@pytest.fixture(scope="session")
def plugin_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed git repository holding the current working tree, as a user would clone it.

    The folder is called ``memcore`` on purpose: Hermes must name the installed plugin after
    ``plugin.yaml``, not after the repository.
    """
    repo = copy_tree_as_cloned(tmp_path_factory.mktemp("git") / "memcore")
    commit_tree(repo)
    return repo


@pytest.fixture(scope="session")
def hermes_venv_factory() -> Callable[..., Venv]:
    """``hermes_venv_factory(root, *extra)``: a fresh venv holding only Hermes (and ``extra``)."""

    def make(root: Path, *extra: str) -> Venv:
        venv = make_venv(root)
        venv.uv_pip_install(HERMES_AGENT, *extra)
        return venv

    return make


def hermes_env(venv: Venv, hermes_home: Path) -> dict[str, str]:
    return venv.env(HERMES_HOME=str(hermes_home))


@pytest.fixture(scope="session")
def hermes_cmd() -> Callable[..., Run]:
    """``hermes_cmd(venv, hermes_home, *args)``: run that venv's real ``hermes``."""

    def call(venv: Venv, hermes_home: Path, *args: str, timeout: float = 110.0) -> Run:
        return run([venv.bin("hermes"), *args], env=hermes_env(venv, hermes_home), timeout=timeout)

    return call


@pytest.fixture(scope="session")
def remember_then_find(hermes_cmd: Callable[..., Run]) -> Callable[..., Run]:
    """``remember_then_find(venv, hermes_home, text, query)``: ``hermes tablestore-mem add
    --sync`` the text, then check that ``search`` for the query finds it; returns the search."""

    def check(venv: Venv, hermes_home: Path, text: str, query: str) -> Run:
        hermes_cmd(venv, hermes_home, "tablestore-mem", "add", text, "--sync").check()
        found = hermes_cmd(venv, hermes_home, "tablestore-mem", "search", query).check()
        texts = [hit["text"] for hit in json.loads(found.stdout)["results"]]
        assert text in texts, found.explain()
        return found

    return check
