"""Model client overhead: ModelClient.complete (conversion, retry wrapper, usage/cost) versus the bare
SDK call, both against the loopback stub, with a 30-message conversation carrying one screenshot.

Prints medians and the ratio measured side by side in one run.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.llm.client import make_client  # noqa: E402
from farm.llm.model_config import LLMConfig, ModelPrice, Provider  # noqa: E402
from farm.llm.stub import ModelStub, StubReply, StubUsage  # noqa: E402
from farm.llm.types import Message, ToolSpec  # noqa: E402

ROUNDS = 200
KEY_ENV = "FARM_BENCH_LLM_KEY"


def conversation() -> list[Message]:
    msgs = [Message.system("You operate a phone. " * 50)]
    for i in range(14):
        msgs.append(Message.user(f"screen {i}: " + "node text " * 40))
        msgs.append(Message(role="assistant", text=f"step {i}"))
    msgs.append(Message.user("now", images=[b"\xff\xd8" + os.urandom(60_000) + b"\xff\xd9"]))
    return msgs


TOOLS = [ToolSpec(name=f"tool_{i}", description="does a thing " * 5) for i in range(12)]


def median_ms(fn: Callable[[], object]) -> float:
    for _ in range(10):
        fn()
    samples = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def bench_provider(stub: ModelStub, provider: Provider, msgs: list[Message]) -> None:
    cfg = LLMConfig(
        provider=provider,
        model="bench",
        base_url=stub.base_url(provider),
        api_key_env=KEY_ENV,
        pricing=ModelPrice(input_per_m=1, output_per_m=2, cache_read_per_m=0.1, cache_write_per_m=1.25),
    )
    client = make_client(cfg)
    sdk = client._sdk  # type: ignore[attr-defined]
    bare: Callable[[], object]
    if provider == "openai":
        from farm.llm.openai_client import to_openai_messages, to_openai_tools

        oa_msgs, oa_tools = to_openai_messages(msgs), to_openai_tools(TOOLS)

        def bare() -> object:
            return sdk.chat.completions.create(model="bench", messages=oa_msgs, tools=oa_tools)
    else:
        from farm.llm.anthropic_client import to_anthropic_messages, to_anthropic_tools

        system, an_msgs = to_anthropic_messages(msgs)
        an_tools = to_anthropic_tools(TOOLS)

        def bare() -> object:
            return sdk.messages.create(model="bench", max_tokens=4096, system=system, messages=an_msgs, tools=an_tools)

    wrapped = median_ms(lambda: client.complete(msgs, TOOLS))
    sdk_only = median_ms(bare)
    print(
        f"{provider:9s} complete() {wrapped:7.2f} ms   bare SDK call {sdk_only:7.2f} ms   "
        f"ratio {wrapped / sdk_only:5.2f}x   overhead {wrapped - sdk_only:+.2f} ms/call"
    )
    client.close()


def main() -> None:
    os.environ[KEY_ENV] = "bench-key"
    msgs = conversation()
    with ModelStub(default=StubReply(tool_calls=[("tool_1", {"x": 1})], usage=StubUsage(1000, 500, 0, 20))) as stub:
        bench_provider(stub, "openai", msgs)
        bench_provider(stub, "anthropic", msgs)


if __name__ == "__main__":
    main()
