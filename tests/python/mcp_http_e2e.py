#!/usr/bin/env python3
"""End-to-end test of `agentcaps mcp --http` with the official Python MCP SDK.

An independent client (the SDK's Streamable HTTP transport, and plain
http.client for what an SDK never sends) drives the server over loopback:

- the tools work over HTTP (allowed and refused calls);
- a foreign Origin and a non-loopback Host get 403 (DNS rebinding);
- 0.0.0.0 without --token-file refuses to start; with a token, a missing or
  wrong bearer gets 401 and the right one works;
- the client's roots narrow the policy's: a subdirectory root confines
  read_file, a root outside the policy widens nothing, and
  notifications/roots/list_changed takes effect; policy_info shows them;
- progress notifications arrive in order, about once a second, during a
  3.5-second shell_command that writes a line every half second, each
  saying how long it has run and how many bytes of output it has written
  (growing);
- protocol versions 2025-06-18 and 2025-11-25 both initialize.

Usage: mcp_http_e2e.py PATH_TO_AGENTCAPS_BINARY
Exit status 0 when every check passed; prints 'N passed, N failed'.
"""

import asyncio
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

# Roots are deprecated from protocol 2026-07-28 on; the versions this test
# speaks have them.
warnings.filterwarnings("ignore", message=".*roots capability is deprecated.*")

try:
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
except ImportError as e:  # the Rust test turns this into a failure
    print(f"the Python MCP SDK is missing ({e}); install it with `pip install mcp`", file=sys.stderr)
    sys.exit(3)

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


def is_error(result):
    return getattr(result, "is_error", getattr(result, "isError", None)) is True


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


class Server:
    """`agentcaps mcp --http ADDR:0 ...`, its URL read from its stderr."""

    def __init__(self, binary, cwd, *args):
        self.stderr_path = os.path.join(cwd, "..", f"server-{time.monotonic_ns()}.err")
        self.stderr = open(self.stderr_path, "w+")
        self.proc = subprocess.Popen([binary, "mcp", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.stderr)
        self.port = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.proc.poll() is None:
            with open(self.stderr_path) as f:
                m = re.search(r"at http://[^ ]*:(\d+)/mcp", f.read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        if self.port is None:
            self.stop()
            with open(self.stderr_path) as f:
                raise RuntimeError(f"the server did not start: {f.read()}")
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def log(self):
        with open(self.stderr_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


def raw_post(port, body, headers=None):
    """One POST with exactly these headers (Host included when given)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    base.update(headers or {})
    skip_host = "Host" in base
    conn.putrequest("POST", "/mcp", skip_host=skip_host)
    data = json.dumps(body).encode()
    base["Content-Length"] = str(len(data))
    for k, v in base.items():
        conn.putheader(k, v)
    conn.endheaders()
    conn.send(data)
    response = conn.getresponse()
    text = response.read().decode(errors="replace")
    conn.close()
    return response.status, dict(response.getheaders()), text


def initialize_body(version, id=1):
    return {"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}


def sse_json(text):
    """The JSON-RPC messages of an SSE (or plain JSON) response body."""
    out = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            out.append(json.loads(line[5:]))
    if not out and text.strip().startswith("{"):
        out.append(json.loads(text))
    return out


# Writes a line of 1000 bytes (and its newline) every half second, seven
# times: 7007 bytes over about 3.5 seconds.
DRIP = """import sys, time
for _ in range(7):
    sys.stdout.write("x" * 1000 + "\\n")
    sys.stdout.flush()
    time.sleep(0.5)
"""


def make_tree(top):
    root = os.path.join(top, "root")
    outside = os.path.join(top, "outside")
    os.makedirs(os.path.join(root, "src"))
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write("outside secret\n")
    with open(os.path.join(root, "src", "lib.txt"), "w") as f:
        f.write("alpha\nneedle here\nomega\n")
    with open(os.path.join(root, "top.txt"), "w") as f:
        f.write("top level\n")
    with open(os.path.join(root, "drip.py"), "w") as f:
        f.write(DRIP)
    policy = os.path.join(top, "policy.toml")
    with open(policy, "w") as f:
        f.write("""
[files]
allowed = ["root"]

[shell]
allowed_commands = ["ls", "cat", "sleep", "echo", "python3"]
working_directory = "root"
path_policy = true
""")
    with open(os.path.join(top, "token"), "w") as f:
        f.write("correct-horse-battery-staple-7f3a\n")
    return root, outside, policy


def uri(path):
    return "file://" + path


async def session_for(url, headers=None, roots=None, on_session=None):
    """Runs on_session(session) in an initialized SDK session."""
    client = create_mcp_http_client(headers=headers)
    kwargs = {}
    if roots is not None:
        async def list_roots(context):
            return types.ListRootsResult(roots=[types.Root(uri=u) for u in roots])
        kwargs["list_roots_callback"] = list_roots
    async with client:
        async with streamable_http_client(url, http_client=client) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, **kwargs) as session:
                init = await session.initialize()
                return await on_session(session, init)


async def tools_over_http(server, root):
    async def body(session, init):
        names = {t.name for t in (await session.list_tools()).tools}
        check("tools/list over HTTP lists the tools", {"read_file", "shell_command", "policy_info"} <= names, names)
        r = await session.call_tool("write_file", {"path": "made.txt", "content": "over http\n"})
        check("write_file over HTTP", not is_error(r) and os.path.exists(os.path.join(root, "made.txt")), text_of(r))
        r = await session.call_tool("read_file", {"path": "made.txt"})
        check("read_file over HTTP is plain text", not is_error(r) and text_of(r) == "over http\n", text_of(r))
        r = await session.call_tool("read_file", {"path": "../outside/secret.txt"})
        check("a read outside is refused over HTTP", is_error(r) and "outside secret" not in text_of(r), text_of(r))
        r = await session.call_tool("shell_command", {"argv": ["cat", "src/lib.txt"]})
        check("shell_command over HTTP", not is_error(r) and "needle here" in text_of(r), text_of(r))
        r = await session.call_tool("shell_command", {"command": "ls ; cat /etc/passwd"})
        check("a command with ; is refused over HTTP", is_error(r) and "root:" not in text_of(r), text_of(r))
        return init
    init = await session_for(server.url, on_session=body)
    version = getattr(init, "protocol_version", None)
    check("the SDK's own version initializes", version in ("2025-06-18", "2025-11-25"), version)


def versions(server):
    for version in ("2025-06-18", "2025-11-25"):
        status, headers, text = raw_post(server.port, initialize_body(version))
        messages = sse_json(text)
        got = messages[0].get("result", {}).get("protocolVersion") if messages else None
        session = {k.lower(): v for k, v in headers.items()}.get("mcp-session-id")
        check(f"protocol {version} initializes (with a session id)",
              status == 200 and got == version and bool(session), (status, text[:300]))


def gate(server):
    status, _, text = raw_post(server.port, initialize_body("2025-06-18"), {"Origin": "http://evil.example"})
    check("a foreign Origin gets 403", status == 403, (status, text))
    status, _, text = raw_post(server.port, initialize_body("2025-06-18"), {"Origin": "http://localhost:5173"})
    check("a loopback Origin is served", status == 200, (status, text[:200]))
    status, _, text = raw_post(server.port, initialize_body("2025-06-18"), {"Host": f"evil.example:{server.port}"})
    check("a non-loopback Host gets 403", status == 403, (status, text))
    status, _, text = raw_post(server.port, initialize_body("2025-06-18"), {"Host": f"127.0.0.1.nip.io:{server.port}"})
    check("a rebinding name that merely starts like loopback gets 403", status == 403, (status, text))
    status, _, text = raw_post(server.port, initialize_body("2025-06-18"), {"Host": f"localhost:{server.port}"})
    check("Host localhost is served", status == 200, (status, text[:200]))


def refuses_unspecified_without_token(binary, root, policy):
    proc = subprocess.run([binary, "mcp", "--http", "0.0.0.0:0", "--policy", policy], cwd=root,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    check("0.0.0.0 without --token-file refuses to start (exit 2, naming --token-file)",
          proc.returncode == 2 and "--token-file" in proc.stderr, (proc.returncode, proc.stderr))


async def token(binary, root, policy, top):
    server = Server(binary, root, "--http", "0.0.0.0:0", "--policy", policy,
                    "--token-file", os.path.join(top, "token"))
    try:
        status, headers, text = raw_post(server.port, initialize_body("2025-06-18"))
        check("with a token, a request without the bearer gets 401", status == 401, (status, text))
        status, _, text = raw_post(server.port, initialize_body("2025-06-18"),
                                   {"Authorization": "Bearer correct-horse-battery-staple-7f3b"})
        check("with a token, a wrong bearer gets 401", status == 401, (status, text))
        status, _, text = raw_post(server.port, initialize_body("2025-06-18"),
                                   {"Authorization": "Basic correct-horse-battery-staple-7f3a"})
        check("with a token, another scheme gets 401", status == 401, (status, text))

        async def body(session, init):
            r = await session.call_tool("read_file", {"path": "src/lib.txt"})
            return not is_error(r) and "needle" in text_of(r)
        ok = await session_for(server.url, headers={"Authorization": "Bearer correct-horse-battery-staple-7f3a"},
                               on_session=body)
        check("with the right bearer the tools work", ok)
    finally:
        server.stop()


async def roots(server, root, outside):
    src = os.path.join(root, "src")

    async def narrowed(session, init):
        r = await session.call_tool("read_file", {"path": "src/lib.txt"})
        check("a subdirectory root: a file inside it is read", not is_error(r) and "needle" in text_of(r), text_of(r))
        r = await session.call_tool("read_file", {"path": "top.txt"})
        check("a subdirectory root confines read_file (a file beside it is refused)",
              is_error(r) and "top level" not in text_of(r) and "outside-roots" in text_of(r), text_of(r))
        r = await session.call_tool("shell_command", {"argv": ["cat", "top.txt"]})
        check("a subdirectory root confines commands' file arguments too",
              is_error(r) and "top level" not in text_of(r), text_of(r))
        r = await session.call_tool("policy_info", {})
        info = getattr(r, "structured_content", None) or getattr(r, "structuredContent", None) or {}
        rw = info.get("files", {}).get("read_write", [])
        check("policy_info shows the effective roots", rw == [src], rw)
    await session_for(server.url, roots=[uri(src)], on_session=narrowed)

    async def widened(session, init):
        r = await session.call_tool("read_file", {"path": os.path.join(outside, "secret.txt")})
        check("a root outside the policy widens nothing", is_error(r) and "outside secret" not in text_of(r), text_of(r))
        r = await session.call_tool("read_file", {"path": "top.txt"})
        check("a root wider than the policy keeps the policy's root", not is_error(r), text_of(r))
    await session_for(server.url, roots=[uri(outside), uri(os.path.dirname(root))], on_session=widened)
    check("the ignored root is logged", f"{uri(outside)}" in server.log() and "root-ignored" in server.log(),
          server.log()[-2000:])

    current = [uri(src)]

    async def changed(session, init):
        r = await session.call_tool("read_file", {"path": "top.txt"})
        check("before list_changed: confined to the first root", is_error(r), text_of(r))
        current[0] = uri(root)
        await session.send_roots_list_changed()
        ok = False
        for _ in range(50):
            await asyncio.sleep(0.1)
            r = await session.call_tool("read_file", {"path": "top.txt"})
            if not is_error(r):
                ok = True
                break
        check("notifications/roots/list_changed takes effect", ok, text_of(r))

    client = create_mcp_http_client()

    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=u) for u in current])
    async with client:
        async with streamable_http_client(server.url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1], list_roots_callback=list_roots) as session:
                await session.initialize()
                await changed(session, None)


async def progress(server):
    seen = []

    async def on_progress(value, total, message):
        seen.append((time.monotonic(), value, message))

    async def body(session, init):
        started = time.monotonic()
        r = await session.call_tool("shell_command", {"argv": ["python3", "drip.py"]}, progress_callback=on_progress)
        return r, started
    r, started = await session_for(server.url, on_session=body)
    values = [v for _, v, _ in seen]
    gaps = [b[0] - a[0] for a, b in zip(seen, seen[1:])]
    check("progress notifications arrive during a 3.5-second command", not is_error(r) and len(seen) >= 2,
          (text_of(r), seen))
    check("progress values increase (in order)", values == sorted(values) and len(set(values)) == len(values), values)
    check("progress comes at most about once a second", all(g >= 0.8 for g in gaps), gaps)
    check("progress says how long the command has run", all(m and "running for" in m for _, _, m in seen), seen)
    written = [re.search(r"(\d+) bytes of output so far", m or "") for _, _, m in seen]
    counts = [int(w.group(1)) for w in written if w]
    check("progress says how many bytes of output so far", len(counts) == len(seen), seen)
    check("the output bytes grow, in order, within what the command wrote",
          counts == sorted(counts) and len(counts) >= 2 and counts[-1] > counts[0]
          and counts[-1] <= 7007, counts)


async def main_async(binary, top):
    root, outside, policy = make_tree(top)
    refuses_unspecified_without_token(binary, root, policy)
    server = Server(binary, root, "--http", "127.0.0.1:0", "--policy", policy)
    try:
        await tools_over_http(server, root)
        versions(server)
        gate(server)
        await roots(server, root, outside)
        await progress(server)
    finally:
        server.stop()
    await token(binary, root, policy, top)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as top:
        asyncio.run(asyncio.wait_for(main_async(sys.argv[1], os.path.realpath(top)), 120))
    print(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == "__main__":
    main()
