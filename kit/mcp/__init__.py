"""Tools over MCP: the kit's MCP server in front of a tool server (record, replay: kit.mcp.proxy,
kit.mcp.replay, kit.mcp.cassette, served by kit.mcp.serve) and a hostile one for the red team
(kit.mcp.hostile). The real `mcp` SDK on every side."""
