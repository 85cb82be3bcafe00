"""What the end-to-end scripts share: the official MCP SDK's import (a
missing SDK is exit 3, which the Rust tests turn into a failure), the tally
of checks, and the text of a tool result."""

import sys

try:
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
except ImportError as e:
    print(f"the Python MCP SDK is missing ({e}); install it with `pip install mcp`", file=sys.stderr)
    sys.exit(3)

__all__ = ["ClientSession", "StdioServerParameters", "types", "stdio_client", "check", "finish", "text_of",
           "send_text"]

_tally = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    """Prints one check's outcome and counts it."""
    if ok:
        _tally["passed"] += 1
        print(f"ok      {name}")
    else:
        _tally["failed"] += 1
        print(f"FAILED  {name}: {detail}")


def finish():
    """Prints 'N passed, N failed' and exits 0 only when all passed."""
    print(f"{_tally['passed']} passed, {_tally['failed']} failed")
    sys.exit(0 if _tally["failed"] == 0 and _tally["passed"] > 0 else 1)


def text_of(result):
    """A tool result's text content."""
    return "\n".join(getattr(c, "text", "") for c in result.content)


def send_text(handler, body):
    """Answers an http.server request with 200 and the text `body`."""
    data = body.encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
