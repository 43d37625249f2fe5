"""freshmark as an MCP server."""
