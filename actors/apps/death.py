"""Why an incarnation died, as values: each cause says its reason in words (for the status, the
log and the callers it cuts off) and whether the death was abnormal (which, with the restart
policy, decides between a restart and a stop). Pure: the wording lives here and only here.
"""

from __future__ import annotations

import signal

import attrs

from actors.apps.processgroup import describe_returncode

STDOUT_CLOSED = "the process closed its stdout (it can answer nothing more)"
# The signals another process sends to end one (`kill`, a stop, the OOM killer, Ctrl-C): the
# process's last stderr line, however old, says nothing about them, and quoting it would read
# as the cause. A crash signal (SIGSEGV, SIGABRT...) is the process's own: its line may say why.
SENT_FROM_OUTSIDE = frozenset(
    {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT}
)


@attrs.frozen
class Exited:
    """The process exited by itself, or was killed (`hint`: its last stderr line, as a clause,
    left out of the reason for a signal sent from outside)."""

    code: int
    hint: str = ""

    @property
    def reason(self) -> str:
        killed = self.code < 0 and -self.code in SENT_FROM_OUTSIDE
        return f"the process {describe_returncode(self.code)}{'' if killed else self.hint}"

    @property
    def abnormal(self) -> bool:
        return self.code != 0


@attrs.frozen
class StdoutClosed:
    """The process closed its stdout: it can answer nothing more, even if it lives on."""

    reason = STDOUT_CLOSED
    abnormal = True


@attrs.frozen
class SpawnFailed:
    """The process could not be started; `text` says why (command, folder)."""

    text: str

    @property
    def reason(self) -> str:
        return self.text

    abnormal = True


@attrs.frozen
class StartupTimeout:
    seconds: float
    hint: str = ""

    @property
    def reason(self) -> str:
        return f"did not start within {self.seconds} s (startupTimeoutSeconds){self.hint}"

    abnormal = True


@attrs.frozen
class ConnectionFailed:
    """The session or its transport failed (`running`: after the app was Running, else while
    it started); `error` is the failure in words."""

    error: str
    running: bool = True
    hint: str = ""

    @property
    def reason(self) -> str:
        stage = "the connection failed" if self.running else "start-up failed"
        return f"{stage}: {self.error}{self.hint}"

    abnormal = True


@attrs.frozen
class Hung:
    """`misses` pings in a row went unanswered."""

    misses: int
    timeout_s: float

    @property
    def reason(self) -> str:
        return f"hung: did not answer {self.misses} pings in a row ({self.timeout_s:g} s each)"

    abnormal = True


@attrs.frozen
class InternalError:
    """A bug of ours ended the incarnation (never the actor)."""

    error: str

    @property
    def reason(self) -> str:
        return f"internal error: {self.error}"

    abnormal = True


@attrs.frozen
class SignInLost:
    """The app's sign-in no longer holds (refused and not renewable, refused by the person, or
    forgotten by request): a new connection asks the person again. Not a failure: the app is
    connected again at once, with no backoff and no restart counted."""

    why: str

    @property
    def reason(self) -> str:
        return f"needs a new sign-in: {self.why}"

    abnormal = False


@attrs.frozen
class SessionEnded:
    """The session ended and nothing said why."""

    reason = "the connection ended"
    abnormal = True


Cause = (
    Exited
    | StdoutClosed
    | SpawnFailed
    | StartupTimeout
    | ConnectionFailed
    | Hung
    | InternalError
    | SignInLost
    | SessionEnded
)
