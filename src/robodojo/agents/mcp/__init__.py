"""The robot as an MCP server (``robodojo mcp``): the agent is an MCP client outside this process.

Modules: ``settings`` (config/agents/mcp.yaml), ``channel`` (the hand-off from the server's requests to the episode
thread, one call at a time), ``toolset`` (what both tool sets share), ``move_eef_tools`` and ``robo_tools`` (the
move_eef contract and the shell harness's base commands as tools), ``content`` (observe's images and the
resources), ``agent`` (:class:`McpAgent`: one tool call per turn of the episode runner), ``server`` (the MCP
protocol and its stdio and streamable HTTP transports). robodojo.episodes.mcp_episode runs an episode with them.
"""
