"""Remote LLM providers: a pool of OpenAI-compatible servers and any LangChain chat model.

- :mod:`.retry`: which errors are worth another try (HTTP 408/429/5xx, connection errors,
  timeouts) and exponential backoff between tries;
- :mod:`.openai_pool`: :class:`~.openai_pool.OpenAIPoolChatModel`, one LangChain chat model over
  one or more OpenAI-compatible base URLs (vLLM, LM Studio, llama.cpp's server, Ollama's ``/v1``);
- :mod:`.langchain_provider`: any ``init_chat_model`` string, with structured output per provider
  and a clear error naming the package to install.

:mod:`graphrag_got.llm.factory` picks between them; callers keep using ``complete_json``/``complete_text``.
"""
