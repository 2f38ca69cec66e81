"""The MCP front end: server, tools, schemas, parameters, errors, runtime, auth and observability."""
