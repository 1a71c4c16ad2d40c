"""What happens to AgentChat agents and teams between runs, and who else records them.

Three step kinds (spec/steps.md), recorded by the AgentChat collector through small hooks:

* ``lifecycle``: a wrapped agent's ``on_reset``, ``save_state`` or ``load_state``, and a
  team's ``reset()``, ``save_state()`` or ``load_state()`` once ``collector.run`` has run the
  team; the state is bound by a digest, never copied;
* ``config_change``: an agent's (or a team's) configuration whose digest differs from the
  last one this collector saw of it, checked when ``collector.run`` starts a run and at
  each lifecycle operation; it names the members that changed, never their values;
* ``recording_conflict``: an agent or team that another open collector records too (two
  collectors wrapping one agent, or a team run by one collector whose participants
  record into another): the collector that notices records it in both receipts and logs
  a warning, so neither receipt claims to be the only record.

Observation never changes what the agent or team does: the call's result or exception
passes unchanged, and a failure to record is counted (the receipt says ``incomplete``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from aer1 import Collector
from aer1 import _steps_vocab as vocab

from ._agentchat_internals import read
from ._errors import count_failure, error_info, failure_status
from ._state import PerCollector

__all__ = [
    "check_config",
    "claim",
    "note_config",
    "observe_team",
    "observed",
    "team_config",
]

log = logging.getLogger("aer1")

_T = TypeVar("_T")

#: Attribute (on a wrapped agent or an observed team) naming the collectors that record it.
_CLAIMS_ATTR = "_aer1_recorders"
#: Attribute (on a team run by ``collector.run``) holding its lifecycle hook.
_TEAM_LIFECYCLE_ATTR = "_aer1_lifecycle_hook"
#: The team methods observed, and the ``operation`` each records.
_TEAM_OPERATIONS = (("reset", "reset"), ("save_state", "save_state"), ("load_state", "load_state"))
_claims_lock = threading.Lock()


# ------------------------------------------------------------------ conflicts


class _Claims:
    """The collectors recording one agent or team (held weakly), and the pairs already reported."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.collectors: weakref.WeakSet[Collector] = weakref.WeakSet()
        self.reported: set[tuple[str, str]] = set()


def _claims(obj: Any) -> _Claims | None:
    """The collectors noted on ``obj``; None for an object that takes no attribute (nothing is detected then)."""
    with _claims_lock:
        claims = vars(obj).get(_CLAIMS_ATTR) if hasattr(obj, "__dict__") else None
        if not isinstance(claims, _Claims):
            claims = _Claims()
            try:
                object.__setattr__(obj, _CLAIMS_ATTR, claims)
            except (AttributeError, TypeError):  # slots, or a frozen object: no marker, no detection
                log.info("aer1: %s takes no marker: a second collector recording it is not detected",
                         type(obj).__name__)
                return None
        return claims


def _one_recording(a: Collector, b: Collector) -> bool:
    """True for one collector, or a collector and its children (``Collector.child``: one session)."""
    return a is b or a.session_id == b.session_id


def claim(obj: Any, collector: Collector, *, subject: str, name: str, detected: str) -> None:
    """Note that ``collector`` records ``obj``; another open collector recording it too is a conflict.

    The conflict is recorded once per pair of collectors and object, in both receipts (a
    finalized one can no longer take it), and logged as a warning. Never raises.
    """
    try:
        claims = _claims(obj)
        if claims is None:
            return
        with claims.lock:
            others = [c for c in claims.collectors if not c.closed and not _one_recording(c, collector)]
            claims.collectors.add(collector)
            new = [c for c in others if (collector.workflow_id, c.workflow_id) not in claims.reported]
            for other in new:
                claims.reported.update({(collector.workflow_id, other.workflow_id),
                                        (other.workflow_id, collector.workflow_id)})
        if new:
            _conflict(collector, new, subject=subject, name=name, detected=detected)
    except Exception as e:  # observation never breaks the wrapping or the run
        count_failure(collector, f"who else records {subject} {name!r}", e)


def _conflict(collector: Collector, others: Sequence[Collector], *, subject: str, name: str, detected: str) -> None:
    log.warning("aer1: %s %r is recorded by another open collector too (workflow %s, here %s): each receipt holds "
                "only the steps its own wrappers or runs saw", subject, name,
                ", ".join(c.workflow_id for c in others), collector.workflow_id)
    _record_conflict(collector, [c.workflow_id for c in others], subject=subject, name=name, detected=detected)
    for other in others:
        _record_conflict(other, [collector.workflow_id], subject=subject, name=name, detected=detected)


def _record_conflict(collector: Collector, other_ids: list[str], *, subject: str, name: str, detected: str) -> None:
    if collector.closed:
        return
    content = vocab.recording_conflict("agentchat", subject=subject, name=name, other_workflow_ids=other_ids,
                                       detected=detected)
    collector.safe_record("recording_conflict", content, agent=name, kind="recording_conflict")


def _foreign_wrappers(collector: Collector, team: Any, team_actor: str, wrappers: Sequence[Any]) -> None:
    """A team run by ``collector`` whose wrapped participants record into other open collectors."""
    others: dict[int, Collector] = {}
    for wrapper in wrappers:
        theirs = wrapper.collector
        if not theirs.closed and not _one_recording(theirs, collector):
            others[id(theirs)] = theirs
    if not others:
        return
    claims = _claims(team)  # the pair is reported once per team, like any conflict
    if claims is None:
        return
    with claims.lock:
        new = [c for c in others.values() if (collector.workflow_id, c.workflow_id) not in claims.reported]
        for other in new:
            claims.reported.update({(collector.workflow_id, other.workflow_id),
                                    (other.workflow_id, collector.workflow_id)})
    if new:
        _conflict(collector, new, subject="team", name=team_actor, detected="run")


# ------------------------------------------------------------ configuration


#: Per collector: agent (or team actor) name -> the digest and configuration last seen.
_configs: PerCollector[dict[str, tuple[str, Mapping[str, Any]]]] = PerCollector(dict)
_configs_lock = threading.Lock()
_ABSENT = object()


def note_config(collector: Collector, name: str, config: Mapping[str, Any]) -> None:
    """Remember the configuration ``name`` was listed with (its ``agents`` entry); never raises."""
    try:
        known = _configs.of(collector)
        digest = collector.config_digest(config)
        with _configs_lock:
            known.setdefault(name, (digest, config))
    except Exception as e:
        count_failure(collector, f"the configuration of {name!r}", e)


def check_config(collector: Collector, name: str, config: Mapping[str, Any], *, subject: str = "agent",
                 actor: str | None = None) -> None:
    """Record a ``config_change`` when ``config`` differs from the one last seen of ``name``; never raises."""
    try:
        if collector.closed:
            return
        digest = collector.config_digest(config)
        known = _configs.of(collector)
        with _configs_lock:
            before = known.get(name)
            known[name] = (digest, config)
        if before is None or before[0] == digest:
            return
        old = before[1]
        changed = [k for k in {*old, *config} if old.get(k, _ABSENT) != config.get(k, _ABSENT)]
        content = vocab.config_change("agentchat", agent=name, subject=subject, old_digest=before[0],
                                      new_digest=digest, changed=changed)
        collector.safe_record("config_change", content, agent=actor or name, kind="config_change")
    except Exception as e:
        count_failure(collector, f"the configuration of {name!r}", e)


def _condition(condition: Any) -> Any:
    """A termination condition by its component configuration (conditions hold no credentials), else its class."""
    if condition is None:
        return None
    try:
        model = condition.dump_component()
        return {"provider": model.provider, "config": model.config}
    except Exception:  # a condition AutoGen cannot serialize (a function): its class names it
        return {"class": type(condition).__name__}


def team_config(team: Any) -> dict[str, Any]:
    """What identifies a team's configuration: class, participants (name, class), max turns, termination.

    Not ``team.dump_component()``: that holds every participant's model client configuration,
    which may hold API keys. The agents' own configurations are checked one by one.
    """
    participants = []
    for p in read(team, "_participants") or []:
        inner = getattr(p, "wrapped_agent", p)
        participants.append({"name": getattr(p, "name", None), "class": type(inner).__name__})
    return {"class": type(team).__name__, "participants": participants, "max_turns": read(team, "_max_turns"),
            "termination_condition": _condition(read(team, "_termination_condition"))}


# ------------------------------------------------------------ lifecycle steps


async def observed(collector: Collector, actor: str, operation: str, call: Awaitable[_T], *, subject: str = "agent",
                   state: Any = None, extras: Mapping[str, Any] | None = None,
                   after: Callable[[], None] | None = None) -> _T:
    """Await ``call`` (a reset, a state saved or loaded) and record it as a ``lifecycle`` step.

    ``state``: the state loaded (for ``save_state`` the state returned is bound). The call's
    result or exception is passed on unchanged; ``after`` runs once the call returned.
    """
    started = time.time()
    try:
        result = await call
    except BaseException as exc:
        _record_lifecycle(collector, actor, operation, subject, state, started, extras, exc)
        raise
    _record_lifecycle(collector, actor, operation, subject, result if operation == "save_state" else state,
                      started, extras, None)
    if after is not None:
        try:
            after()
        except Exception as e:  # observation never breaks the call
            count_failure(collector, f"what follows the {operation} of {actor!r}", e)
    return result


def _record_lifecycle(collector: Collector, actor: str, operation: str, subject: str, state: Any, started: float,
                      extras: Mapping[str, Any] | None, exc: BaseException | None) -> None:
    try:
        if collector.closed:
            log.info("aer1: %s of %r after the receipt was finalized: not recorded", operation, actor)
            return
        content = vocab.lifecycle("agentchat", operation=operation, subject=subject,
                                  state=state if exc is None else None,
                                  error=None if exc is None else error_info(exc), extras=extras)
        collector.safe_record("lifecycle", content, agent=actor, kind="lifecycle",
                              status="ok" if exc is None else failure_status(exc), started_at=started)
    except Exception as e:
        count_failure(collector, f"the {operation} of {actor!r}", e)


class _TeamHook:
    """A team's ``reset``/``save_state``/``load_state``, recorded in every open collector that ran it."""

    def __init__(self, team: Any) -> None:
        self.team = team
        claims = _claims(team)
        if claims is None:
            raise TypeError(f"{type(team).__name__} takes no attributes: its resets cannot be observed")
        self.claims = claims
        #: per collector: the team's actor and identity members (as the last run recorded them)
        self.identity: weakref.WeakKeyDictionary[Collector, tuple[str, dict[str, Any]]] = weakref.WeakKeyDictionary()
        for attr, operation in _TEAM_OPERATIONS:
            original = getattr(team, attr)
            object.__setattr__(team, attr, self._observe(original, operation))
        object.__setattr__(team, _TEAM_LIFECYCLE_ATTR, self)

    def _observe(self, original: Callable[..., Awaitable[Any]], operation: str) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(original)
        async def observed_operation(*args: Any, **kwargs: Any) -> Any:
            started = time.time()
            state = (args[0] if args else kwargs.get("state")) if operation == "load_state" else None
            try:
                result = await original(*args, **kwargs)
            except BaseException as exc:
                self._record(operation, state, started, exc)
                raise
            self._record(operation, result if operation == "save_state" else state, started, None)
            return result

        return observed_operation

    def _record(self, operation: str, state: Any, started: float, exc: BaseException | None) -> None:
        with self.claims.lock:
            collectors = [c for c in self.claims.collectors if not c.closed]
        for collector in collectors:
            known = self.identity.get(collector)
            if known is not None:
                _record_lifecycle(collector, known[0], operation, "team", state, started, known[1], exc)


def observe_team(collector: Collector, team: Any, actor: str, identity: Mapping[str, Any], wrappers: Sequence[Any],
                 agent_config: Callable[[Any], dict[str, Any]], *, nested: bool) -> None:
    """At the start of ``collector.run(team)``: conflicts, configuration changes, and (not nested) the team's hooks.

    ``nested``: the team runs as a participant of another team (its resets are the outer
    agent's business: SocietyOfMindAgent resets its team after every turn). Never raises.
    """
    try:
        claim(team, collector, subject="team", name=actor, detected="run")
        if wrappers:
            _foreign_wrappers(collector, team, actor, wrappers)
        check_config(collector, actor, team_config(team), subject="team")
        for wrapper in wrappers:
            check_config(wrapper.collector, wrapper.name, agent_config(wrapper.wrapped_agent))
        if not nested:
            hook = vars(team).get(_TEAM_LIFECYCLE_ATTR)
            if not (isinstance(hook, _TeamHook) and hook.team is team):
                hook = _TeamHook(team)
            hook.identity[collector] = (actor, dict(identity))
    except Exception as e:  # observation never breaks the run
        count_failure(collector, f"the lifecycle of team {actor!r}", e)
