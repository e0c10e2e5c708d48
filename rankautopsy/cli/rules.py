"""`rankautopsy rules ...`: list, explain, check and test rule packs. Errors are raised for `cli.main()`.

The rule-pack modules are imported inside the commands: `--help` and completion need none of them.
"""

import sys
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rankautopsy.model import Rule
    from rankautopsy.rulepacks.loader import PackContents

TESTS_FAILED = 1  # `rules test`: an example failed (2, a pack that cannot load, comes from the error handler)

rules_app = typer.Typer(
    name="rules",
    help="List, explain, check and test rule packs.",
    add_completion=False,
    rich_markup_mode=None,
    no_args_is_help=True,
)

RulesOption = Annotated[
    list[str] | None,
    typer.Option(
        "--rules", metavar="PATH", help="An extra rule pack file or directory (repeatable; after RANKAUTOPSY_RULES)."
    ),
]


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", metavar="FORMAT", help="Output format: text, json.")
]


@rules_app.command("list")
def list_command(output_format: FormatOption = OutputFormat.TEXT, rules: RulesOption = None) -> None:
    """Every rule, built-in and user: id, cause, role, where it is defined, title."""
    from rankautopsy.rulepacks.catalogue import list_json, list_text

    catalogue = _catalogue(rules)
    _write(list_json(catalogue) if output_format is OutputFormat.JSON else list_text(catalogue))


@rules_app.command("explain")
def explain_command(
    rule_id: Annotated[str, typer.Argument(metavar="ID", help="A rule id or one of its aliases.", show_default=False)],
    output_format: FormatOption = OutputFormat.TEXT,
    rules: RulesOption = None,
) -> None:
    """What a rule detects, why it matters, an example, remediation, and where it is defined."""
    from rankautopsy.rulepacks.catalogue import explain_json, explain_text, find_rule

    rule = find_rule(_catalogue(rules), rule_id)
    _write(explain_json(rule) if output_format is OutputFormat.JSON else explain_text(rule))


@rules_app.command("check")
def check_command(
    packs: Annotated[list[str], typer.Argument(metavar="PACK...", help="Pack files or directories.")],
) -> None:
    """Validate packs without running anything else: `OK: N rules in PACK`, or every problem (exit 2)."""
    from rankautopsy.rulepacks.loader import read_packs

    for pack in read_packs([Path(p) for p in packs]):
        _write(f"OK: {_count(len(pack.rules), 'rule')} in {pack.path}{_disables(pack)}")


@rules_app.command("test")
def test_command(
    packs: Annotated[
        list[str] | None, typer.Argument(metavar="[PACK...]", help="Pack files or directories (default: built-ins).")
    ] = None,
) -> None:
    """Run the examples of the built-in packs, or of the given ones; exit 1 if any fails."""
    from rankautopsy.rulepacks.loader import builtin_pack_paths, read_packs
    from rankautopsy.rulepacks.ruletest import describe, run_examples

    if packs:
        contents = read_packs([Path(p) for p in packs], check_examples=False)
    else:
        contents = read_packs(builtin_pack_paths(), builtin=True, check_examples=False)
    passed = failed = 0
    for pack in contents:
        for result in run_examples(pack.rules):
            if result.ok:
                passed += 1
                continue
            failed += 1
            line = pack.line_of(result)
            _write(f"{pack.path}{'' if line is None else f':{line}'}: {result.rule_id}: {describe(result)}")
    _write(f"{passed} passed, {failed} failed")
    if failed:
        raise typer.Exit(TESTS_FAILED)


def _catalogue(cli_paths: Sequence[str] | None) -> "tuple[Rule, ...]":
    from rankautopsy.rulepacks.loader import load_rules
    from rankautopsy.rulepacks.sources import user_rule_paths

    return load_rules(user_rule_paths(cli_paths or (), Path.cwd()))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _disables(pack: "PackContents") -> str:
    return f" (disables {', '.join(pack.disabled)})" if pack.disabled else ""


def _write(text: str) -> None:
    sys.stdout.write(text + "\n")
