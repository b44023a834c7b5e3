"""Model access: neutral messages and tools, OpenAI-compatible and Anthropic clients, pricing, a loopback stub."""
