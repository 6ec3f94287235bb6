"""The MCP server: the JSON API's operations as MCP tools and resources, for agents that
speak MCP (stdio: `wirecat mcp`; streamable HTTP: `/mcp`). A delivery layer like
`archive/web`: every call is an API request dispatched in-process, so authentication,
the agent's rate, scopes, the send guard, idempotency keys and errors are the API's own."""
