"""The APIs the model proxy speaks to coding agents, each translated to and from the chat completions the episode's
LLM client makes (robodojo.agents.shell.model_proxy): one module per wire format."""
