"""The command lines most runs are, parsed without typer: `diagnose` with its options, and `--version`.

Importing typer and building its click command is a third of a small diagnosis's start. This parser
takes only what it is sure of (exact option names, `--opt value` and `--opt=value`, paths between
options, values that are well formed) and returns None for anything else, so that typer parses it and
explains any mistake: `--help`, completion, `--`, bundled short options, an unknown option, a bad
value, no path. `tests/test_cli_quick.py` checks that it binds every accepted line as typer does.
"""

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rankautopsy.cli import PROG, _state

if TYPE_CHECKING:
    from rankautopsy.render import Format

# Each option of `diagnose` as typer declares it (cli/application.py): its keyword and, for a flag, its value.
FLAGS: dict[str, tuple[str, bool]] = {
    "--exit-zero": ("exit_zero", True),
    "--color": ("color", True),
    "--no-color": ("color", False),
    "--checklist": ("checklist", True),
    "--verbose": ("verbose", True),
    "-v": ("verbose", True),
    "--debug": ("debug", True),
    "--quiet": ("quiet", True),
    "-q": ("quiet", True),
    "--follow": ("follow", True),
    "-L": ("follow", True),
}


def _format(text: str) -> "Format | None":
    from rankautopsy.render import Format  # the model with it: not for --version

    return Format(text) if text in Format._value2member_map_ else None


def _skew(text: str) -> float | None:
    digits = text.replace(".", "", 1)  # as [0-9]+(\.[0-9]*)?|\.[0-9]+
    return float(text) if digits.isascii() and digits.isdigit() and float(text) <= 1e9 else None


def _width(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 and int(text) >= 40 else None


# Each option that takes a value: its keyword, whether it repeats, and how its text becomes the value.
VALUES: dict[str, tuple[str, bool, Callable[[str], Any]]] = {
    "--dmesg": ("dmesg", True, str),
    "--rules": ("rules", True, str),
    "--format": ("output_format", False, _format),
    "-f": ("output_format", False, _format),
    "--output": ("output", False, str),
    "-o": ("output", False, str),
    "--boot-time": ("boot_time", False, str),
    "--clock-skew": ("clock_skew", False, _skew),
    "--tz": ("tz", False, str),
    "--width": ("width", False, _width),
}


def parse(args: list[str]) -> Callable[[], int] | None:
    """The command to run for these arguments, or None when typer must parse them."""
    if os.environ.get(f"_{PROG.upper()}_COMPLETE"):
        return None
    if args in (["--version"], ["-V"]):
        return print_version
    if args[:1] != ["diagnose"] or (kwargs := diagnose_options(args[1:])) is None:
        return None
    from rankautopsy.cli.diagnose import run

    _state["command"] = f"{PROG} diagnose"
    return lambda: run(**kwargs)


def print_version() -> int:
    import sys

    from rankautopsy import __version__

    sys.stdout.write(f"{PROG} {__version__}\n")
    return 0


def diagnose_options(args: list[str]) -> dict[str, Any] | None:
    """The keywords `diagnose` is called with for these arguments, or None unless they are plain."""
    kwargs: dict[str, Any] = {"paths": [], "dmesg": [], "rules": []}
    tokens = iter(args)
    for token in tokens:
        if not token.startswith("-") or token == "-":
            kwargs["paths"].append(token)
            continue
        name, equals, attached = token.partition("=")
        if name in FLAGS and not equals:
            keyword, flag = FLAGS[name]
            kwargs[keyword] = flag
            continue
        if name not in VALUES or (equals and not name.startswith("--")):
            return None
        text = attached if equals else next(tokens, None)
        if text is None or (text.startswith("-") and text != "-"):
            return None
        keyword, repeats, convert = VALUES[name]
        value = convert(text)
        if value is None:
            return None
        if repeats:
            kwargs[keyword].append(value)
        else:
            kwargs[keyword] = value
    return kwargs if kwargs["paths"] else None
