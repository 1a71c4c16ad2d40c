"""A classic AutoGen group chat, recorded: a tool call and a code execution in one receipt.

    python examples/legacy_groupchat.py [OUT_DIR]

Three ``ConversableAgent``s (the classic ``autogen`` API of pyautogen 0.2 or ag2 <= 0.14)
run a ``GroupChat`` offline: ``user`` asks, ``planner`` (a scripted model client registered
through ``register_model_client``) calls a price tool and then writes Python, and
``executor`` runs both, the code on this machine with a ``LocalCommandLineCodeExecutor``.
``observe_groupchat`` records every message once, each speaker selection, the tool call,
the code execution and why the chat ended. The script writes OUT_DIR/receipt.json and
OUT_DIR/receipt.evidence.jsonl (default OUT_DIR: out/legacy_groupchat), verifies them
and prints the verdict and a timeline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any

from _outdir import missing_extra, parse_out_dir

try:
    import autogen
    from autogen.coding import LocalCommandLineCodeExecutor
except ModuleNotFoundError as e:
    missing_extra(e, "legacy")

from aer1 import format_timeline, verify_receipt
from aer1.collectors import AER1AutoGenCollector, observe_groupchat

TASK = "What do three widgets cost?"
PRICES = {"widget": 19.99, "gadget": 5.25}
CODE = "```python\nunit = 19.99\nprint(f'{3 * unit:.2f}')\n```"
#: What the scripted planner says, turn by turn.
PLANNER_SCRIPT: list[dict[str, Any]] = [
    {
        "content": None,
        "tool_calls": [
            {
                "id": "call_price_1",
                "type": "function",
                "function": {"name": "lookup_price", "arguments": json.dumps({"item": "widget"})},
            }
        ],
    },
    {"content": f"A widget costs 19.99. Computing the total:\n{CODE}"},
    {"content": "Three widgets cost 59.97. TERMINATE"},
]
#: Ends the chat if the script ever runs longer than planned.
MAX_ROUND = 12


class ScriptedClient:
    """A ModelClient that answers from PLANNER_SCRIPT: no network, no API key."""

    turn = 0

    def __init__(self, config: Any, **kwargs: Any) -> None:
        self.config = config

    def create(self, params: dict[str, Any]) -> Any:
        message = {"role": "assistant", **PLANNER_SCRIPT[min(ScriptedClient.turn, len(PLANNER_SCRIPT) - 1)]}
        ScriptedClient.turn += 1
        return SimpleNamespace(
            id=f"scripted-{ScriptedClient.turn}",
            model="scripted",
            choices=[SimpleNamespace(message=message, finish_reason="stop")],
            usage=None,
            cost=0.0,
            message_retrieval_function=None,
        )

    def message_retrieval(self, response: Any) -> list[Any]:
        message = response.choices[0].message
        return [message if message.get("tool_calls") else message["content"]]

    def cost(self, response: Any) -> float:
        return 0.0

    @staticmethod
    def get_usage(response: Any) -> dict[str, Any]:
        return {}


def lookup_price(item: Annotated[str, "the item to price"]) -> float:
    """The unit price of an item."""
    return PRICES[item]


def build(work_dir: Path) -> tuple[autogen.ConversableAgent, autogen.GroupChatManager]:
    """The three agents, their group chat and its manager."""
    llm_config = {"config_list": [{"model": "scripted", "model_client_cls": "ScriptedClient"}], "cache_seed": None}
    user = autogen.ConversableAgent(
        "user", llm_config=False, human_input_mode="NEVER", description="Asks the question."
    )
    planner = autogen.ConversableAgent(
        "planner",
        system_message="You plan, call tools and write Python.",
        description="Plans, prices items and writes code.",
        llm_config=llm_config,
        human_input_mode="NEVER",
    )
    executor = autogen.ConversableAgent(
        "executor",
        llm_config=False,
        human_input_mode="NEVER",
        description="Runs tools and code.",
        code_execution_config={"executor": LocalCommandLineCodeExecutor(work_dir=work_dir, timeout=60)},
    )
    autogen.register_function(
        lookup_price, caller=planner, executor=executor, name="lookup_price", description="Price an item."
    )
    planner.register_model_client(ScriptedClient)  # after register_function, which rebuilds the client

    def next_speaker(last: Any, groupchat: Any) -> Any:
        return executor if last is planner else planner

    groupchat = autogen.GroupChat(
        [user, planner, executor], messages=[], max_round=MAX_ROUND, speaker_selection_method=next_speaker
    )
    manager = autogen.GroupChatManager(
        groupchat,
        llm_config=False,
        is_termination_msg=lambda m: "TERMINATE" in (m.get("content") or ""),
        silent=True,
    )
    return user, manager


def main(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    user, manager = build(out_dir / "work")

    collector = AER1AutoGenCollector(goal=TASK)
    observe_groupchat(manager, collector)
    result = user.initiate_chat(manager, message=TASK, silent=True)
    answer = str(result.summary).strip()
    receipt = collector.finalize(final_answer=answer)

    failures = collector.verify(receipt)
    path = out_dir / "receipt.json"
    collector.save(path, workflow=receipt)
    report = verify_receipt(path)
    print(format_timeline(receipt))
    print(f"answer: {answer}")
    print(f"receipt: {path}")
    print(f"verdict: {report.verdict}" + (f" ({'; '.join(failures)})" if failures else ""))
    return 0 if report.valid and not failures else 1



if __name__ == "__main__":
    sys.exit(main(parse_out_dir((__doc__ or "").splitlines()[0], Path("out/legacy_groupchat"))))
