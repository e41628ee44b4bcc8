"""nagent_tools: call N-Agent's allowlisted tools from sandboxed code.

    import nagent_tools
    now = nagent_tools.get_current_time(timezone="UTC")   # attribute access
    hits = nagent_tools.call("search_knowledge", query="x")  # by name

Each call sends one JSON line {"id", "tool", "arguments"} over the Unix
socket $NAGENT_TOOLS_SOCKET (/run/nagent/tools.sock) and reads one JSON line
back. A result that is JSON is returned parsed, otherwise as a string. A
refused or failed call raises ToolError; the script decides what to do.
"""

import json
import os
import socket

__all__ = ["call", "ToolError", "available"]

SOCKET = os.environ.get("NAGENT_TOOLS_SOCKET", "/run/nagent/tools.sock")


class ToolError(Exception):
    """A tool call was refused (allowlist, max_tool_calls, policy) or failed."""

    def __init__(self, tool, message, status="error"):
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.status = status


_conn = None
_file = None
_next_id = 0


def _connect():
    global _conn, _file
    if _conn is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(SOCKET)
        _conn, _file = s, s.makefile("rwb")
    return _file


def call(name, **arguments):
    """Call tool `name` with keyword arguments and return its result."""
    global _next_id
    _next_id += 1
    f = _connect()
    req = {"id": _next_id, "tool": name, "arguments": arguments}
    f.write(json.dumps(req).encode() + b"\n")
    f.flush()
    line = f.readline()
    if not line:
        raise ToolError(name, "the tool socket closed; the execution is ending")
    ans = json.loads(line)
    if not ans.get("ok"):
        raise ToolError(name, ans.get("error", "failed"), ans.get("status", "error"))
    content = ans.get("content", "")
    try:
        return json.loads(content)
    except (ValueError, TypeError):
        return content


def available():
    """The tool names this execution may call."""
    return [t for t in os.environ.get("NAGENT_ALLOWED_TOOLS", "").split(",") if t]


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)

    def tool(**arguments):
        return call(name, **arguments)

    tool.__name__ = name
    return tool
