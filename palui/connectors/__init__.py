"""MCP servers as toolsets: one `McpConnector` per server, all held by a `ConnectorManager`."""

from palui.connectors.backoff import Backoff
from palui.connectors.connector import McpConnector, ToolsChanged
from palui.connectors.manager import ConnectorManager

__all__ = ["Backoff", "ConnectorManager", "McpConnector", "ToolsChanged"]
