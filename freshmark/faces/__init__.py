"""Faces: the command line, the HTTP service and the MCP server."""
