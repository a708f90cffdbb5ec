"""The robot as an MCP server (``robodojo mcp``): the agent is an MCP client outside this process.

Modules: ``settings`` (config/agents/mcp.yaml), ``channel`` (the hand-off from the server's requests to the episode
thread, one call at a time), ``toolset`` (what both tool sets share), ``move_eef_tools`` and ``robo_tools`` (the
move_eef contract and the shell harness's base commands as tools; ``tool_sets`` names them), ``content`` (observe's
images and the resources), ``agent`` (:class:`McpAgent`: one tool call per turn of the episode runner), ``server``
(the MCP protocol and its stdio and streamable HTTP transports), ``cli_agent`` (``mcp:<cli>``: a coding-agent CLI in
the shell harness's sandbox as the client). robodojo.episodes.mcp_episode runs an episode with them.
"""
