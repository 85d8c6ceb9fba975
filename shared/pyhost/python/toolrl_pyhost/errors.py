"""The errors an answer can carry, by the `type` the TypeScript side reads."""

from __future__ import annotations

import os
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))


class HostError(Exception):
    type = "internal"


class BadRequest(HostError):
    """A request the protocol does not allow (unknown method, key or instance, missing field)."""

    type = "bad_request"


class LoadFailed(HostError):
    """User code that cannot be found, imported or constructed."""

    type = "load_error"


class UserError(HostError):
    """User code raised; the message is `Type: message` and the last frames of the traceback."""

    type = "user_error"

    @classmethod
    def wrap(cls, where: str, e: BaseException) -> UserError:
        # The user's frames only (the host's own add nothing the user can act on), the innermost last.
        frames = [f for f in traceback.extract_tb(e.__traceback__) if not f.filename.startswith(_HERE)]
        tail = "".join(traceback.format_list(frames[-3:])).rstrip()
        return cls(f"{where} raised {type(e).__name__}: {e}" + (f"\n{tail}" if tail else "")[:4000])


class Timeout(HostError):
    type = "timeout"
