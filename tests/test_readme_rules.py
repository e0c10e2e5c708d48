"""The README's rule-pack sections stay true: the generated rule table, and the five-minute walkthrough."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

from rankautopsy.cli import main
from rankautopsy.rulepacks import catalogue
from rankautopsy.rulepacks.catalogue import README_COMMAND, README_END, README_START, readme_table, with_table
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.rulepacks.sources import ENV_VAR

README = Path(__file__).resolve().parent.parent / "README.md"
MINIMAL_PACK = (Path(__file__).parent / "rulepacks" / "fluxcap.yaml").read_text()


def test_readme_rule_table_is_current() -> None:
    text = README.read_text(encoding="utf-8")
    assert with_table(text, readme_table(load_rules())) == text, (
        f"the README's rule table is stale: run `{README_COMMAND}`"
    )


def test_catalogue_script_rewrites_only_between_the_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nbefore\n{README_START}\nold table\n{README_END}\nafter\n")
    assert catalogue.main(["--readme", str(readme), "--check"]) == 1
    assert catalogue.main(["--readme", str(readme)]) == 0
    assert (
        readme.read_text() == f"# Title\n\nbefore\n{README_START}\n{readme_table(load_rules())}\n{README_END}\nafter\n"
    )
    assert catalogue.main(["--readme", str(readme), "--check"]) == 0


def test_catalogue_script_without_markers_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n")
    assert catalogue.main(["--readme", str(readme)]) == 2
    assert capsys.readouterr().err == f"rankautopsy: error: no {README_START} ... {README_END} markers in the README\n"
    assert readme.read_text() == "# Title\n"


def _walkthrough() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("### In five minutes") : text.index("### Where packs are loaded from")]


def _blocks(kind: str) -> list[str]:
    return [textwrap.dedent(b) for b in re.findall(rf"```{kind}\n(.*?)^ *```", _walkthrough(), re.S | re.M)]


def _rules_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["rankautopsy", "rules", "test", "my-pack.yaml"])
    with pytest.raises(SystemExit):
        main()
    return "$ rankautopsy rules test my-pack.yaml\n" + capsys.readouterr().out


def test_walkthrough_pack_is_the_minimal_pack_and_its_test_output_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _blocks("yaml")[0]
    assert pack == MINIMAL_PACK
    (tmp_path / "my-pack.yaml").write_text(pack)
    assert _rules_test(tmp_path, monkeypatch, capsys) == _blocks("console")[0]


def test_walkthrough_failure_output_is_what_rules_test_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pack, facts = _blocks("yaml")[:2]
    typo = facts.replace('code: "7731"', 'code: "7732"')
    (tmp_path / "my-pack.yaml").write_text(re.sub(r"^( *)match: .*\n", lambda m: m[1] + typo, pack, flags=re.M))
    assert _rules_test(tmp_path, monkeypatch, capsys) == _blocks("console")[1]
