"""Errors a user can cause. The CLI prints their message (what was wrong, what to do) without a traceback."""


class KprofError(Exception):
    """A mistake in how kprof was called or configured; the message says what to do instead."""


class UnknownFamilyError(KprofError):
    pass


class UnknownRunError(KprofError):
    pass


class StoreError(KprofError):
    pass


class TraceFormatError(KprofError):
    """A trace file could not be read as any supported profiler format."""


class LaunchTableError(KprofError):
    """A parser produced a table that does not match the canonical launch table schema."""


class UnsupportedConfig(ValueError):
    """A kernel version cannot run with the meta-parameters it was given (a block smaller than a row that
    must fit in one block, more shared memory than the device has, a tile the compiler rejects). A sweep
    records such a configuration as skipped, with this message as the reason, and goes on."""
