"""Recording agents hosted on AutoGen's distributed gRPC runtime (``autogen-ext[grpc]``).

Each worker process keeps its own chain: :class:`AER1GrpcWorkerRuntime` is a
``GrpcWorkerAgentRuntime`` that records, into the worker's own collector (and its journal,
when it has one), every message its agents handle: the message, sender, recipient agent,
topic, the handler's result or error, and the handler's own timing. Messages sent from
outside any agent (the caller's task) are recorded by the runtime that sends them.

The worker runtime has no intervention handlers, so observation goes through its public
registration calls: each agent instance is observed as it is created
(``register_factory``, ``register_agent_instance``), its ``on_message`` wrapped on the
instance; the agent's class and behaviour do not change.

Receipts travel as bytes over the runtime itself (no shared disk): each worker serves its
receipt with :meth:`AER1GrpcWorkerRuntime.serve_receipt`, and the process that started the
workflow calls :func:`collect_worker_receipts`, which links each worker's receipt into the
workflow's collector (spec/linked.md). A worker that does not answer (killed, cut off) is
recorded as an ``error`` step; its journal, recovered with ``aer1 recover`` where it ran,
gives a child receipt marked incomplete that the parent links afterwards.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

try:  # the framework first: without it, say which extra to install
    from autogen_core import (
        Agent,
        AgentId,
        AgentType,
        CancellationToken,
        MessageContext,
        RoutedAgent,
        TopicId,
        message_handler,
        try_get_known_serializers_for_type,
    )
    from autogen_ext.runtimes.grpc import GrpcWorkerAgentRuntime
except ImportError as e:
    from ._extras import missing_framework

    raise missing_framework("grpc_runtime") from e

from aer1 import _steps_vocab as vocab

from ._errors import error_info, failure_status

if TYPE_CHECKING:
    from aer1 import Collector

#: The framework member of these contents (spec/steps.md): the runtime is autogen-core's.
_FRAMEWORK = "autogen_core"

__all__ = [
    "CALLER_ACTOR",
    "RECEIPT_AGENT_PREFIX",
    "AER1GrpcWorkerRuntime",
    "ReceiptReply",
    "ReceiptRequest",
    "collect_worker_receipts",
    "receipt_agent_id",
    "receipt_serializers",
]

T = TypeVar("T", bound=Agent)

#: The agent type that serves a worker's receipt: ``aer1_receipt.<worker>`` (one per worker).
RECEIPT_AGENT_PREFIX = "aer1_receipt."
#: Actor of steps about messages sent from outside any agent (the caller of the runtime).
CALLER_ACTOR = "caller"


@dataclass
class ReceiptRequest:
    """Asks a worker to finalize its collector and send back its receipt."""

    final_answer: str = ""


@dataclass
class ReceiptReply:
    """A worker's finalized receipt and its evidence file, as text (both are UTF-8 JSON)."""

    worker: str
    receipt: str
    evidence: str = ""


def receipt_serializers() -> list[Any]:
    """Serializers for the receipt messages: add them to every runtime that sends or serves them."""
    return [*try_get_known_serializers_for_type(ReceiptRequest), *try_get_known_serializers_for_type(ReceiptReply)]


def receipt_agent_id(worker: str) -> AgentId:
    """The id of the agent that serves ``worker``'s receipt."""
    return AgentId(RECEIPT_AGENT_PREFIX + worker, "default")


def _topic(topic: TopicId | None) -> dict[str, str] | None:
    return None if topic is None else {"type": topic.type, "source": topic.source}


class _ReceiptAgent(RoutedAgent):
    """Finalizes the worker's collector once and answers with the receipt and its evidence."""

    def __init__(self, collector: Collector, worker: str) -> None:
        super().__init__(f"serves the aer1 receipt of worker {worker}")
        self._collector = collector
        self._worker = worker

    @message_handler
    async def on_request(self, message: ReceiptRequest, ctx: MessageContext) -> ReceiptReply:
        from aer1._bundle import evidence_bytes

        receipt = self._collector.finalize(final_answer=message.final_answer or None)
        evidence = evidence_bytes(self._collector, receipt)
        return ReceiptReply(self._worker, orjson.dumps(receipt).decode("utf-8"),
                            evidence.decode("utf-8") if evidence is not None else "")


class AER1GrpcWorkerRuntime(GrpcWorkerAgentRuntime):
    """A gRPC worker runtime whose agents' handled messages are recorded into ``collector``.

    ``worker``: this worker's name (in every step's content, and the name its receipt is
    served and linked under). Other arguments are the worker runtime's.
    """

    def __init__(self, host_address: str, collector: Collector, *, worker: str, **options: Any) -> None:
        if not worker or "/" in worker:
            raise ValueError(f"worker must be a non-empty name without '/', got {worker!r}")
        super().__init__(host_address, **options)
        self.aer1_collector = collector
        self.aer1_worker = worker
        self.add_message_serializer(receipt_serializers())

    # -- observing agents as they are created -------------------------------------

    async def register_factory(
        self,
        type: str | AgentType,
        agent_factory: Callable[[], T | Awaitable[T]],
        *,
        expected_class: type[T] | None = None,
    ) -> AgentType:
        """Register ``agent_factory``; every instance it creates is observed."""

        async def observed_factory() -> T:
            agent = agent_factory()
            if inspect.isawaitable(agent):
                agent = await agent
            self._observe(agent)
            return agent

        return await super().register_factory(type, observed_factory, expected_class=expected_class)

    async def register_agent_instance(self, agent_instance: Agent, agent_id: AgentId) -> AgentId:
        """Register an instance, observed from its first message."""
        self._observe(agent_instance)
        return await super().register_agent_instance(agent_instance, agent_id)

    async def serve_receipt(self) -> AgentType:
        """Register the agent that answers :class:`ReceiptRequest` with this worker's receipt (not observed)."""
        collector, worker = self.aer1_collector, self.aer1_worker
        agent_type = AgentType(receipt_agent_id(worker).type)
        await GrpcWorkerAgentRuntime.register_factory(self, agent_type, lambda: _ReceiptAgent(collector, worker),
                                                      expected_class=_ReceiptAgent)
        return agent_type

    def _observe(self, agent: Agent) -> None:
        original = agent.on_message
        if getattr(original, "_aer1_observed", False):
            return
        collector, worker = self.aer1_collector, self.aer1_worker

        @functools.wraps(original)
        async def on_message(message: Any, ctx: MessageContext) -> Any:
            started = time.time()
            try:
                result = await original(message, ctx)
            except BaseException as exc:
                _record_handled(collector, worker, agent, message, ctx, started, error=exc)
                raise
            _record_handled(collector, worker, agent, message, ctx, started, result=result)
            return result

        on_message._aer1_observed = True  # type: ignore[attr-defined]
        agent.on_message = on_message  # type: ignore[method-assign]

    # -- messages entering from outside any agent ---------------------------------

    async def send_message(
        self,
        message: Any,
        recipient: AgentId,
        *,
        sender: AgentId | None = None,
        cancellation_token: CancellationToken | None = None,
        message_id: str | None = None,
    ) -> Any:
        """Send as the worker runtime does; a send from outside any agent is recorded with its reply."""
        if sender is not None:
            return await super().send_message(message, recipient, sender=sender,
                                              cancellation_token=cancellation_token, message_id=message_id)
        started = time.time()
        extras: dict[str, Any] = {"delivery": "send", "worker": self.aer1_worker, "sender": None,
                                  "recipient": str(recipient), "message_type": _type_name(message)}
        try:
            result = await super().send_message(message, recipient, cancellation_token=cancellation_token,
                                                message_id=message_id)
        except BaseException as exc:
            content = vocab.message(_FRAMEWORK, content=message, message_id=message_id, error=error_info(exc),
                                    extras=extras)
            self.aer1_collector.safe_record("send", content, agent=CALLER_ACTOR, kind="message",
                                            status=failure_status(exc), started_at=started,
                                            recipient=str(recipient))
            raise
        content = vocab.message(_FRAMEWORK, content=message, message_id=message_id,
                                extras={**extras, "result": result})
        self.aer1_collector.safe_record("send", content, agent=CALLER_ACTOR, kind="message", started_at=started,
                                        recipient=str(recipient))
        return result

    async def publish_message(
        self,
        message: Any,
        topic_id: TopicId,
        *,
        sender: AgentId | None = None,
        cancellation_token: CancellationToken | None = None,
        message_id: str | None = None,
    ) -> None:
        """Publish as the worker runtime does; a publish from outside any agent is recorded (a failed one too)."""
        if sender is not None:
            await super().publish_message(message, topic_id, sender=sender, cancellation_token=cancellation_token,
                                          message_id=message_id)
            return
        started = time.time()
        extras = {"delivery": "publish", "worker": self.aer1_worker, "sender": None, "topic": _topic(topic_id),
                  "message_type": _type_name(message)}
        try:
            await super().publish_message(message, topic_id, cancellation_token=cancellation_token,
                                          message_id=message_id)
        except BaseException as exc:
            content = vocab.message(_FRAMEWORK, content=message, message_id=message_id, error=error_info(exc),
                                    extras=extras)
            self.aer1_collector.safe_record("publish", content, agent=CALLER_ACTOR, kind="message",
                                            status=failure_status(exc), started_at=started)
            raise
        content = vocab.message(_FRAMEWORK, content=message, message_id=message_id, extras=extras)
        self.aer1_collector.safe_record("publish", content, agent=CALLER_ACTOR, kind="message", started_at=started)


def _type_name(value: Any) -> str:
    t = type(value)
    return f"{t.__module__}.{t.__qualname__}"


def _record_handled(collector: Collector, worker: str, agent: Agent, message: Any, ctx: MessageContext,
                    started: float, *, result: Any = None, error: BaseException | None = None) -> None:
    """One ``message`` step for a handled message: by the handling agent, with its outcome."""
    try:
        me = str(agent.id)
        sender = str(ctx.sender) if ctx.sender is not None else None
        extras: dict[str, Any] = {
            "delivery": "handled",
            "worker": worker,
            "sender": sender,
            "recipient": me,
            "topic": _topic(ctx.topic_id),
            "is_rpc": ctx.is_rpc,
            "message_type": _type_name(message),
        }
        status = "ok"
        if error is not None:
            status = failure_status(error)
        elif ctx.is_rpc:
            extras["result"] = result
        content = vocab.message(_FRAMEWORK, content=message, message_id=ctx.message_id,
                                error=None if error is None else error_info(error), extras=extras)
        collector.safe_record("message", content, agent=me, kind="message", status=status, started_at=started,
                              ended_at=max(time.time(), started), reply_to=sender if ctx.is_rpc else None)
    except Exception as e:  # observation never breaks the handler; the receipt says incomplete
        collector.count_recording_failure(f"a message handled by worker {worker!r}", e)


async def collect_worker_receipts(
    runtime: GrpcWorkerAgentRuntime,
    parent: Collector,
    workers: Sequence[str],
    *,
    timeout: float,
) -> dict[str, dict[str, Any] | None]:
    """Ask each worker for its receipt over the runtime and link it into ``parent``.

    Returns, per worker, the link step's header, or None when the worker did not answer
    within ``timeout`` seconds (the worker runtime never times out an RPC by itself) or
    sent a receipt that could not be linked; each such worker is recorded in ``parent``
    as an ``error`` step.
    """
    out: dict[str, dict[str, Any] | None] = {}
    for worker in workers:
        started = time.time()
        try:
            reply = await asyncio.wait_for(runtime.send_message(ReceiptRequest(), receipt_agent_id(worker)), timeout)
            if not isinstance(reply, ReceiptReply) or reply.worker != worker:
                raise TypeError(f"worker {worker!r} answered with {type(reply).__name__}, not its ReceiptReply")
            out[worker] = parent.link(reply.receipt.encode("utf-8"), agent=f"worker:{worker}",
                                      evidence=reply.evidence.encode("utf-8") if reply.evidence else None,
                                      started_at=started)
        except Exception as e:
            error = error_info(e)
            if isinstance(e, asyncio.TimeoutError):
                error["message"] = f"no answer within {timeout} s"
            content = vocab.error_step(_FRAMEWORK, error=error, phase="collect_receipt",
                                       extras={"worker": worker, "what": "the worker's receipt could not be collected"})
            parent.safe_record("error", content, agent=f"worker:{worker}", kind="error", status="error",
                               started_at=started)
            out[worker] = None
    return out
