"""User-facing errors: each prints as one line (where, what was expected) and exits nonzero."""


class GpusimError(Exception):
    """An error caused by the user's input or environment, reported as one clear line."""

    exit_code = 2

    def __init__(self, message: str, where: str | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class SpecError(GpusimError):
    """A workload spec or config that does not validate."""


class ListingError(GpusimError):
    """A SASS listing that cannot be parsed."""


class ToolchainError(GpusimError):
    """A missing or failing CUDA toolchain."""


class EmulationError(GpusimError):
    """A fault during functional emulation (bad address, deadlock, step limit)."""


class WrongResultError(GpusimError):
    """The emulated kernel's outputs differ from the workload's numpy reference."""


class TraceFormatError(GpusimError):
    """A trace file with the wrong version, truncated, or of another program."""


def pydantic_one_line(err, source: str) -> str:
    """Squash a pydantic ValidationError into one line naming the field path."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e.get("loc", ())) or "<root>"
        parts.append(f"field '{loc}': {e.get('msg')}")
    return f"{source}: " + "; ".join(parts)
