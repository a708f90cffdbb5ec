"""LLM access: the OpenAI-compatible client, the offline replay server, and the message types they share."""
