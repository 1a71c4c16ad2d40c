"""The code runner agent: runs the fenced code blocks of the latest message in a sandbox.

(``CodeRunnerAgent``, not "CodeExecutor": in AutoGen a code executor is the thing that runs
code for an agent, not an agent.)

Only blocks tagged with a supported language (python, sh, bash) run, one after the
other, stopping at the first failure. Each block becomes a ``code_execution`` step with
its code, language, exit code, output and the sandbox used. Without a sandbox the
agent refuses to exist unless the caller explicitly opts out, and every step of an
opted-out executor says so.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from aer1 import _steps_vocab as vocab

from ._code import SUPPORTED_LANGUAGES, execute_code_blocks, extract_code_blocks, join_outputs
from ._context import TurnContext
from ._history import HistoryView
from ._messages import Message, text_of
from ._sandbox import (
    BWRAP_PATH,
    DEFAULT_LIMITS,
    Sandbox,
    SandboxLimits,
    SandboxUnavailableError,
    UnsandboxedExecutor,
    default_sandbox,
)
from ._sandbox.workdir import create_work_dir

NO_CODE_REPLY = "No code blocks to execute."
SUCCEEDED = "execution succeeded"
FAILED = "execution failed"


def result_text(exit_code: int, output: str) -> str:
    """The reply content for a result: the exit code, then the captured output."""
    return f"exitcode: {exit_code} ({SUCCEEDED if exit_code == 0 else FAILED})\nCode output:\n{output}"


class CodeRunnerAgent:
    """Runs code blocks from the latest message inside ``sandbox`` with ``work_dir`` as its disk.

    With ``sandbox=None`` the best sandbox available is used (bubblewrap at ``bwrap``); when
    there is none this raises ``SandboxUnavailableError`` unless ``allow_unsandboxed=True``.
    An explicitly given unsandboxed executor needs ``allow_unsandboxed=True`` too.
    """

    def __init__(
        self,
        name: str,
        *,
        work_dir: str | Path,
        sandbox: Sandbox | None = None,
        allow_unsandboxed: bool = False,
        limits: SandboxLimits = DEFAULT_LIMITS,
        description: str = "Runs the python, sh and bash code blocks of the latest message in a sandbox.",
        bwrap: str = BWRAP_PATH,
    ) -> None:
        if sandbox is None:
            sandbox = default_sandbox(allow_unsandboxed=allow_unsandboxed, bwrap=bwrap)
        elif sandbox.name == UnsandboxedExecutor.name and not allow_unsandboxed:
            raise SandboxUnavailableError(
                "the given executor runs code without isolation; pass allow_unsandboxed=True to opt out explicitly"
            )
        self.name = name
        self.description = description
        self.sandbox = sandbox
        self.allow_unsandboxed = allow_unsandboxed
        self.limits = limits
        # Checked now, as the sandbox will (BubblewrapSandbox.work_dir_guard), so that no
        # directory is made inside one the sandbox user can write.
        self.work_dir = create_work_dir(work_dir, guard=getattr(sandbox, "work_dir_guard", None))

    def config(self) -> dict[str, Any]:
        """What identifies this agent in a receipt."""
        return {
            "sandbox": self.sandbox.name,
            "allow_unsandboxed": self.allow_unsandboxed,
            "languages": list(SUPPORTED_LANGUAGES),
            "limits": self.limits,
        }

    async def reply(self, history: HistoryView, context: TurnContext) -> Message:
        """Run the supported blocks of the latest message; reply with exit code and output."""
        last = history.last()
        blocks = [b for b in extract_code_blocks(text_of(last) if last is not None else "") if b.runnable]
        if not blocks:
            return {"role": "user", "content": NO_CODE_REPLY, "name": self.name}
        outputs: list[str] = []
        exit_code = 0
        for index, block in enumerate(blocks):
            started = time.time()
            result = await asyncio.to_thread(
                execute_code_blocks, [block], sandbox=self.sandbox, work_dir=self.work_dir, limits=self.limits
            )
            exit_code = result.exit_code
            outputs.append(result.output)
            error = vocab.error_code("timeout", "the code block ran past its time limit") if result.timed_out else None
            context.record(
                "code_execution",
                vocab.code_execution(
                    "groupchat", blocks=[{"language": block.language, "code": block.code}],
                    exit_code=result.exit_code, output=result.output, error=error,
                    extras={"index": index, "sandbox": result.sandbox, "unsandboxed_opt_in": self.allow_unsandboxed,
                            "timed_out": result.timed_out, "output_truncated": result.output_truncated,
                            "limits_hit": list(result.limits_hit)},
                ),
                status=vocab.code_status(result.exit_code),
                started_at=started,
            )
            if exit_code != 0:
                break
        return {"role": "user", "content": result_text(exit_code, join_outputs(outputs)), "name": self.name}
