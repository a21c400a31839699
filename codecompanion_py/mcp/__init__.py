"""Model Context Protocol servers: their tools in the chat (client.py, http.py, servers.py)."""
