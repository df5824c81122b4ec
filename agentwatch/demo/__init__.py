"""The live demo's parts: a simulated support agent instrumented with `@trace` (`agent`) and a stand-in LLM
judge, an OpenAI-compatible server on the loopback (`judge`). `agentwatch demo` runs them."""
