"""The network API shared by HTTP and MCP: models, schema bounds, serving policy."""
