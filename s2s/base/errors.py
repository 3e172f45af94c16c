"""User-facing errors: each carries a location and a hint, and the CLI turns it into one line and exit 2."""
from __future__ import annotations


class UserError(Exception):
    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.hint = hint

    def one_line(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        tail = f" (hint: {self.hint})" if self.hint else ""
        return f"error: {where}{self.message}{tail}"
