"""Typed errors: the core raises them, the CLI turns each into one line on stderr and exit 2.

Every message is shown through the log-text sanitiser (`sources.sanitize.clean_name`): a file name, a
rule field or a value quoted from the input is untrusted and must not reach a terminal as escape
sequences, invisible characters or an extra line."""

from __future__ import annotations


def clean_name(text: str) -> str:
    from rankautopsy.sources.sanitize import clean_name  # when a message is shown: not for --version

    return clean_name(text)


class RankautopsyError(Exception):
    """A user-facing failure, with an optional location (`path:line: rule-id:`) and hint."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        rule_id: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.rule_id = rule_id
        self.hint = hint

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        if self.rule_id is not None:
            where += f"{self.rule_id}: "
        text = f"{where}{self.message}"
        return clean_name(f"{text} ({self.hint})" if self.hint else text)


class InputError(RankautopsyError):
    """A path that is missing, empty or holds nothing readable."""


class UsageError(RankautopsyError):
    """An option that makes no sense (a bad --boot-time, an unknown format...)."""


class OptionError(UsageError):
    """A bad value given on the command line, named by its option when it has one: the CLI adds the
    hint that says where the command's syntax is explained, as it does for any usage mistake."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option

    def __str__(self) -> str:
        return clean_name(f"{self.option}: {self.message}" if self.option else self.message)


class RulePackError(RankautopsyError):
    """A rule pack that cannot be loaded; `problems` holds every problem found, each a full line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0] if len(problems) == 1 else f"{len(problems)} problems in rule packs")
        self.problems = problems

    def __str__(self) -> str:
        return "\n".join(clean_name(problem) for problem in self.problems)
