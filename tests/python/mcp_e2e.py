#!/usr/bin/env python3
"""End-to-end test of `agentcaps mcp` with the official Python MCP SDK.

An independent client (not our own code, not rmcp) launches the server with
a policy, lists the tools and calls each one allowed and refused, including
the attacks that matter: a read through a symlink leading outside, a command
with `;`, a write outside, a patch escaping the root, a request to the cloud
metadata address, and `env` (a host secret in the server's environment must
not reach the child).

Usage: mcp_e2e.py PATH_TO_AGENTCAPS_BINARY
Exit status 0 when every check passed; prints 'N passed, N failed'.
"""

import asyncio
import http.server
import json
import os
import sys
import tempfile
import threading

try:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as e:  # the Rust test turns this into a failure
    print(f"the Python MCP SDK is missing ({e}); install it with `pip install mcp`", file=sys.stderr)
    sys.exit(3)

SECRET = "agentcaps-e2e-host-secret-7f3a"
EXPECTED_TOOLS = {
    "read_file", "write_file", "list_directory", "file_info",
    "search_files", "shell_command", "http_request", "apply_patch",
}

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok      {name}")
    else:
        failed += 1
        print(f"FAILED  {name}: {detail}")


def attr(obj, snake, camel):
    """SDK 2.x uses snake_case attributes, 1.x camelCase."""
    return getattr(obj, snake, None) if hasattr(obj, snake) else getattr(obj, camel, None)


def is_error(result):
    return attr(result, "is_error", "isError") is True


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from loopback\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def make_tree(top):
    root = os.path.join(top, "root")
    outside = os.path.join(top, "outside")
    os.makedirs(os.path.join(root, "src"))
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write("outside secret\n")
    with open(os.path.join(root, "src", "lib.txt"), "w") as f:
        f.write("alpha\nneedle here\nomega\n")
    with open(os.path.join(root, "edit.txt"), "w") as f:
        f.write("one\ntwo\nthree\n")
    os.symlink(outside, os.path.join(root, "escape"))
    return root, outside


async def run(binary, root, outside, port):
    policy = os.path.join(root, "..", "policy.toml")
    with open(policy, "w") as f:
        f.write(f"""
[files]
allowed = ["root"]
max_read_bytes = 65536

[shell]
allowed_commands = ["ls", "cat", "echo", "env"]
working_directory = "root"
path_policy = true

[egress]
allowed_cidrs = ["127.0.0.0/8"]
allowed_ports = [{port}]
allowed_methods = ["GET"]
""")
    env = dict(os.environ)
    env[SECRET.upper().replace("-", "_")] = SECRET
    env["AGENTCAPS_E2E_SECRET"] = SECRET
    params = StdioServerParameters(
        command=binary, args=["mcp", "--policy", policy], env=env, cwd=root
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            check("lists exactly the eight tools", names == EXPECTED_TOOLS, sorted(names))
            for t in tools:
                schema = attr(t, "input_schema", "inputSchema") or {}
                check(f"{t.name} has an object schema and a description",
                      schema.get("type") == "object" and bool(t.description), schema)
            read_desc = next((t.description for t in tools if t.name == "read_file"), "")
            check("descriptions come from the live policy", root in read_desc, read_desc)

            async def call(name, args):
                return await session.call_tool(name, args)

            # --- files, allowed -------------------------------------------------
            r = await call("write_file", {"path": "notes.txt", "content": "hello notes\n"})
            check("write_file inside is allowed", not is_error(r), text_of(r))
            r = await call("read_file", {"path": "notes.txt"})
            check("read_file inside is allowed", not is_error(r) and "hello notes" in text_of(r), text_of(r))
            r = await call("list_directory", {"path": "."})
            check("list_directory inside is allowed", not is_error(r) and "notes.txt" in text_of(r), text_of(r))
            r = await call("file_info", {"path": "notes.txt"})
            check("file_info inside is allowed", not is_error(r) and '"file"' in text_of(r), text_of(r))
            r = await call("search_files", {"pattern": "needle"})
            check("search_files finds a match", not is_error(r) and "lib.txt" in text_of(r), text_of(r))

            # --- files, refused -------------------------------------------------
            r = await call("read_file", {"path": "escape/secret.txt"})
            check("read through a symlink leading outside is refused",
                  is_error(r) and "outside secret" not in text_of(r), text_of(r))
            r = await call("read_file", {"path": "../outside/secret.txt"})
            check("read with .. outside is refused", is_error(r), text_of(r))
            r = await call("write_file", {"path": "../outside/planted.txt", "content": "x"})
            check("write outside is refused", is_error(r) and not os.path.exists(os.path.join(outside, "planted.txt")), text_of(r))
            r = await call("write_file", {"path": "escape/planted.txt", "content": "x"})
            check("write through a symlink outside is refused", is_error(r) and not os.path.exists(os.path.join(outside, "planted.txt")), text_of(r))
            r = await call("search_files", {"pattern": "secret", "path": "escape"})
            check("search through a symlink outside is refused or finds nothing",
                  "outside secret" not in text_of(r), text_of(r))

            # --- shell ----------------------------------------------------------
            r = await call("shell_command", {"argv": ["ls"]})
            check("shell ls is allowed", not is_error(r) and "notes.txt" in text_of(r), text_of(r))
            r = await call("shell_command", {"command": "ls ; cat /etc/passwd"})
            check("a command with ; is refused", is_error(r) and "root:" not in text_of(r), text_of(r))
            r = await call("shell_command", {"argv": ["cat", "escape/secret.txt"]})
            check("cat through a symlink outside is refused", is_error(r) and "outside secret" not in text_of(r), text_of(r))
            r = await call("shell_command", {"argv": ["env"]})
            out = text_of(r)
            check("env runs", not is_error(r), out)
            check("env does not see the host secret", SECRET not in out, out)

            # --- patch ----------------------------------------------------------
            escape_patch = (
                "--- /dev/null\n+++ b/../outside/evil.txt\n@@ -0,0 +1 @@\n+evil\n"
            )
            r = await call("apply_patch", {"patch": escape_patch})
            check("a patch escaping the root is refused",
                  is_error(r) and not os.path.exists(os.path.join(outside, "evil.txt")), text_of(r))
            good_patch = (
                "--- a/edit.txt\n+++ b/edit.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
            )
            r = await call("apply_patch", {"patch": good_patch})
            with open(os.path.join(root, "edit.txt")) as f:
                edited = f.read()
            check("a patch inside applies", not is_error(r) and edited == "one\nTWO\nthree\n", text_of(r) + edited)

            # --- http -----------------------------------------------------------
            r = await call("http_request", {"url": f"http://127.0.0.1:{port}/"})
            check("http to the allowed loopback server works",
                  not is_error(r) and "hello from loopback" in text_of(r), text_of(r))
            r = await call("http_request", {"url": "http://169.254.169.254/latest/meta-data/"})
            check("http to the cloud metadata address is refused",
                  is_error(r) and "169.254" in text_of(r), text_of(r))

            # --- malformed arguments are tool errors, not protocol errors --------
            r = await call("read_file", {"path": 5})
            check("wrong argument type is a tool error", is_error(r), text_of(r))
            r = await call("write_file", {"path": "x.txt"})
            check("missing argument is a tool error", is_error(r), text_of(r))
            r = await call("shell_command", {})
            check("neither argv nor command is a tool error", is_error(r), text_of(r))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    binary = sys.argv[1]
    server = http.server.HTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with tempfile.TemporaryDirectory() as top:
            root, outside = make_tree(os.path.realpath(top))
            asyncio.run(asyncio.wait_for(run(binary, root, outside, server.server_address[1]), 120))
    finally:
        server.shutdown()
    print(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == "__main__":
    main()
