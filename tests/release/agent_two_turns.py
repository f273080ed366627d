"""Two turns of a real Hermes ``AIAgent`` against a chat server at ``argv[1]`` (run by a venv's Python).

Turn one states a fact; the turn is stored by the memory provider as Hermes configured it.
Turn two asks something the model answers by calling ``tablestore_search``. Prints JSON.
"""

import json
import sys

from run_agent import AIAgent

agent = AIAgent(
    base_url=sys.argv[1],
    api_key="sk-loopback",
    model="fake-model",
    quiet_mode=True,
    skip_context_files=True,
    enabled_toolsets=["memory"],
    max_iterations=4,
    session_id="release-session",
    platform="cli",
    user_id="vera",
)
try:
    manager = agent._memory_manager
    provider = manager.get_provider("tablestore-mem") if manager else None
    first = agent.run_conversation("I'm vegetarian, and I cook most evenings.")
    # Let the turn reach the store before the next one (a user types slower than this).
    manager.flush_pending(30)
    provider.runtime.flush(30)
    provider.runtime.wait_idle(30)
    second = agent.run_conversation("What should I cook for dinner tonight?")
    print(
        json.dumps(
            {
                "provider": provider.name if provider else None,
                "backend": provider.runtime.config.backend if provider else None,
                "first": first.get("final_response"),
                "second": second.get("final_response"),
            }
        )
    )
finally:
    agent.shutdown_memory_provider()
