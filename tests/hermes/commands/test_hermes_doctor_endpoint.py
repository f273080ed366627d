"""``hermes tablestore-mem doctor`` (secrets redacted) never shows credentials written into
the endpoint URL (``https://AK:SECRET@host``); nor do ``memcore doctor`` and ``config show``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcore.config import without_userinfo
from memcore_hermes.commands.doctor import run_doctor
from memcore_hermes.config.home import HermesHome

ENDPOINT = "https://LTAIuser:URLSECRETvalue@127.0.0.1:9"
KEYS = {"TABLESTORE_MEMORY_AK": "env-ak-id", "TABLESTORE_MEMORY_SK": "env-sk-secret"}


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        (ENDPOINT, "https://***@127.0.0.1:9"),
        ("http://a@b@host/x?y=@z", "http://***@host/x?y=@z"),
        ("https://host.example.com", "https://host.example.com"),
        ("not a url @ all", "not a url @ all"),
        (None, None),
    ],
)
def test_without_userinfo(given: Any, shown: Any) -> None:
    assert without_userinfo(given) == shown


def test_hermes_doctor_hides_the_endpoint_userinfo(hermes_home: Path, kit: Any) -> None:
    kit.write_config(
        hermes_home, backend="tablestore", endpoint=ENDPOINT, instance_name="inst", timeout=1.0
    )
    report = run_doctor(HermesHome(hermes_home), environ=KEYS)
    text = json.dumps(report)
    assert "URLSECRETvalue" not in text and "LTAIuser" not in text, text
    assert "https://***@127.0.0.1:9" in text


def test_memcore_doctor_and_config_show_hide_the_endpoint_userinfo(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memcore_cli.app import app
    from memcore_cli.wiring.state import Overrides

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(
        json.dumps(
            {"backend": "tablestore", "endpoint": ENDPOINT, "instance_name": "inst", "timeout": 1.0}
        ),
        encoding="utf-8",
    )
    environ = {"MEMCORE_HOME": str(home), **KEYS}
    for args in (
        ["doctor"],
        ["--json", "doctor"],
        ["config", "show"],
        ["--json", "config", "show"],
    ):
        result = CliRunner().invoke(app, args, env=environ, obj=Overrides(environ=environ))
        shown = result.stdout + result.stderr
        assert "URLSECRETvalue" not in shown and "LTAIuser" not in shown, (args, shown)


def test_hermes_memory_status_hides_the_endpoint_userinfo(hermes_home: Path, kit: Any) -> None:
    """``hermes memory status`` prints the provider's status lines, the search line naming the
    endpoint: as the doctor shows it."""
    from memcore_hermes.config.readiness import check_readiness

    kit.write_config(
        hermes_home, backend="tablestore", endpoint=ENDPOINT, instance_name="inst", timeout=1.0
    )
    lines = check_readiness(HermesHome(hermes_home), KEYS).status_lines()
    text = json.dumps(lines)
    assert "URLSECRETvalue" not in text and "LTAIuser" not in text, text
    assert "https://***@127.0.0.1:9" in text, text
