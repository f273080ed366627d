"""Shell completion: ``--show-completion`` and ``--install-completion`` write only in the
user's home, say what they wrote, and fail like every other command (one line, exit code)."""

from __future__ import annotations

import pytest

from memcore_cli.settings import completion


@pytest.fixture
def user_home(tmp_path, monkeypatch):
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def _shell(monkeypatch, name):
    monkeypatch.setattr(completion, "detect_shell", lambda: name)


def test_install_names_every_file_it_writes(local_cli, user_home, monkeypatch):
    _shell(monkeypatch, "bash")
    result = local_cli("--install-completion", env={"HOME": str(user_home)})
    assert result.exit_code == 0, result.stderr
    script = user_home / ".bash_completions" / "memcore.sh"
    rc_file = user_home / ".bashrc"
    assert str(script) in result.stdout and str(rc_file) in result.stdout
    assert f"source '{script}'" in rc_file.read_text()
    assert "_MEMCORE_COMPLETE" in script.read_text()
    written = {p for p in user_home.rglob("*") if p.is_file()}
    assert written == {script, rc_file}


def test_install_that_cannot_write_is_one_line_not_a_traceback(local_cli, user_home, monkeypatch):
    """``~/.bashrc`` a folder: Typer's install raised IsADirectoryError up to the user."""
    _shell(monkeypatch, "bash")
    (user_home / ".bashrc").mkdir()
    result = local_cli("--install-completion", env={"HOME": str(user_home)})
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("memcore: error: cannot install bash completion: ")
    assert ".bashrc" in result.stderr and len(result.stderr.splitlines()) == 1
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("flag", ["--install-completion", "--show-completion"])
def test_an_unsupported_shell_is_a_usage_error_on_stderr(local_cli, user_home, monkeypatch, flag):
    """Typer said "Shell sh is not supported." (on stdout, for install) and exited 1."""
    _shell(monkeypatch, "sh")
    result = local_cli(flag, env={"HOME": str(user_home)})
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "shell 'sh' is not supported" in result.stderr and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert list(user_home.iterdir()) == []


def test_powershell_profile_and_policy_are_left_to_the_user(local_cli, user_home, monkeypatch):
    """Typer's install ran ``Set-ExecutionPolicy Unrestricted`` and appended to ``$PROFILE``,
    wherever it points, without a word about either."""
    _shell(monkeypatch, "pwsh")
    ran = []
    monkeypatch.setattr("subprocess.run", lambda *a, **k: ran.append(a))
    result = local_cli("--install-completion", env={"HOME": str(user_home)})
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert ran == [] and "$PROFILE" in result.stderr
    shown = local_cli("--show-completion", env={"HOME": str(user_home)})
    assert shown.exit_code == 0 and "Register-ArgumentCompleter" in shown.stdout
    assert list(user_home.iterdir()) == []


def test_a_shell_named_after_show_completion_is_the_one_shown(local_cli, user_home, monkeypatch):
    """``memcore --show-completion fish`` (as older Typer took it) printed the detected
    shell's script, bash's, and exited 0."""
    _shell(monkeypatch, "bash")
    result = local_cli("--show-completion", "fish", env={"HOME": str(user_home)})
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "complete --command memcore" in result.stdout and "COMPREPLY" not in result.stdout


def test_a_shell_named_after_install_completion_is_the_one_installed(
    local_cli, user_home, monkeypatch
):
    """``memcore --install-completion fish`` installed bash completion and edited
    ``~/.bashrc``, a file the user had not asked to be touched."""
    _shell(monkeypatch, "bash")
    result = local_cli("--install-completion", "fish", env={"HOME": str(user_home)})
    assert result.exit_code == 0, (result.stdout, result.stderr)
    script = user_home / ".config" / "fish" / "completions" / "memcore.fish"
    assert result.stdout.startswith(f"fish completion installed in {script}\n")
    assert {p for p in user_home.rglob("*") if p.is_file()} == {script}


@pytest.mark.parametrize("flag", ["--install-completion", "--show-completion"])
@pytest.mark.parametrize("word", ["tcsh", "list", ""])
def test_a_word_after_a_completion_option_that_names_no_shell_is_refused(
    local_cli, user_home, monkeypatch, flag, word
):
    _shell(monkeypatch, "bash")
    result = local_cli(flag, word, env={"HOME": str(user_home)})
    assert result.exit_code == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("memcore: error: cannot ") and f"shell {word!r} is not supported" in line
    assert result.stdout == "" and list(user_home.iterdir()) == []
