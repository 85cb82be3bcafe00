#!/usr/bin/env python3
"""End-to-end test of `agentcaps mcp` with the official Python MCP SDK.

An independent client (not our own code, not rmcp) launches the server with
a policy, lists the tools and calls each one allowed and refused, including
the attacks that matter: a read through a symlink leading outside, a command
with `;`, a write outside, a patch escaping the root, a request to the cloud
metadata address, and `env` (a host secret in the server's environment must
not reach the child).

Every successful result must be plain text (never an escaped JSON document)
and carry `structuredContent` valid against the tool's `outputSchema` (the
SDK validates it; this script validates it again with `jsonschema`). It also
checks that a fast call is answered while a slow one runs, that a cancelled
call stops (a cancelled command's processes are gone), and that a recursive
listing of a 4000-deep tree stops at max_entries, truncated.

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
import time

from checks import ClientSession, StdioServerParameters, check, finish, send_text, stdio_client, text_of

try:
    import jsonschema
except ImportError as e:  # the Rust test turns this into a failure
    print(f"jsonschema is missing ({e}); install it with `pip install mcp`", file=sys.stderr)
    sys.exit(3)

SECRET = "agentcaps-e2e-host-secret-7f3a"
EXPECTED_TOOLS = {
    "read_file", "read_many_files", "write_file", "edit_file",
    "create_directory", "move_file", "list_directory", "file_info",
    "search_files", "shell_command", "http_request", "apply_patch",
    "policy_info",
}
DEEP = 4000
SLEEP = "41.731"


def sleepers():
    """The pids of the `sleep SLEEP` processes still alive (zombies are
    dead: they only wait to be reaped)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if len(argv) > 1 and os.path.basename(argv[0]) == b"sleep" and argv[1] == SLEEP.encode() \
                and state != "Z":
            found.append(int(pid))
    return found

def attr(obj, snake, camel):
    """SDK 2.x uses snake_case attributes, 1.x camelCase."""
    return getattr(obj, snake, None) if hasattr(obj, snake) else getattr(obj, camel, None)


def is_error(result):
    return attr(result, "is_error", "isError") is True


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        send_text(self, "hello from loopback\n")

    def log_message(self, *args):
        pass


def remove_deep(root):
    """Removes the deep tree one level at a time (rmtree would recurse
    4000 times and hold 4000 descriptors)."""
    deep = os.path.join(root, "deep")
    while os.path.isdir(os.path.join(deep, "d")):
        if os.path.isdir(os.path.join(deep, "d", "d")):
            os.rename(os.path.join(deep, "d", "d"), os.path.join(deep, "up"))
            os.rmdir(os.path.join(deep, "d"))
            os.rename(os.path.join(deep, "up"), os.path.join(deep, "d"))
        else:
            os.rmdir(os.path.join(deep, "d"))


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
    # A 4000-deep tree, made through directory handles (its path is longer
    # than PATH_MAX).
    os.mkdir(os.path.join(root, "deep"))
    fd = os.open(os.path.join(root, "deep"), os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEEP):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    return root, outside


async def run(binary, root, outside, port):
    policy = os.path.join(root, "..", "policy.toml")
    with open(policy, "w") as f:
        f.write(f"""
[files]
allowed = ["root"]
max_read_bytes = 65536

[shell]
allowed_commands = ["ls", "cat", "echo", "env", "sleep"]
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
    log = os.path.join(root, "..", "calls.log")
    params = StdioServerParameters(
        command=binary, args=["mcp", "--policy", policy, "--log", log], env=env, cwd=root
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            check("lists exactly the expected tools", names == EXPECTED_TOOLS, sorted(names))
            output_schemas = {}
            for t in tools:
                schema = attr(t, "input_schema", "inputSchema") or {}
                check(f"{t.name} has an object schema and a description",
                      schema.get("type") == "object" and bool(t.description), schema)
                out_schema = attr(t, "output_schema", "outputSchema") or {}
                check(f"{t.name} declares an object outputSchema", out_schema.get("type") == "object", out_schema)
                output_schemas[t.name] = out_schema
                ann = t.annotations
                hints = [attr(ann, "read_only_hint", "readOnlyHint"), attr(ann, "open_world_hint", "openWorldHint"),
                         attr(ann, "idempotent_hint", "idempotentHint")] if ann else [None]
                check(f"{t.name} has a title and annotations",
                      bool(t.title) and None not in hints, (t.title, ann))
                text = json.dumps(schema) + json.dumps(out_schema)
                check(f"{t.name} schemas use standard formats only",
                      '"uint' not in text and '"int64' not in text and '"int32' not in text, text)
            read_schema = next(attr(t, "input_schema", "inputSchema") for t in tools if t.name == "read_file")
            check("offset_line has minimum 1",
                  read_schema["properties"]["offset_line"].get("minimum") == 1, read_schema)
            read_desc = next((t.description for t in tools if t.name == "read_file"), "")
            check("descriptions come from the live policy", root in read_desc, read_desc)

            async def call(name, args):
                result = await session.call_tool(name, args)
                if not is_error(result):
                    structured = attr(result, "structured_content", "structuredContent")
                    try:
                        jsonschema.validate(structured, output_schemas[name])
                        valid = True
                    except jsonschema.ValidationError as e:
                        valid = str(e)
                    check(f"{name} structuredContent matches its outputSchema", valid is True, valid)
                return result

            # --- files, allowed -------------------------------------------------
            r = await call("write_file", {"path": "notes.txt", "content": "hello notes\n"})
            check("write_file inside is allowed", not is_error(r), text_of(r))
            r = await call("read_file", {"path": "notes.txt"})
            check("read_file inside is allowed", not is_error(r) and "hello notes" in text_of(r), text_of(r))
            r = await call("write_file", {"path": "quoted.txt", "content": 'say "hi"\n\tand go\n'})
            r = await call("read_file", {"path": "quoted.txt"})
            check("read_file text is the file's lines as they are (no JSON escaping)",
                  text_of(r) == 'say "hi"\n\tand go\n', repr(text_of(r)))
            r = await call("list_directory", {"path": "."})
            lines = text_of(r).splitlines()
            check("list_directory is one entry a line",
                  not is_error(r) and "notes.txt" in lines and "src/" in lines, text_of(r))
            r = await call("file_info", {"path": "notes.txt"})
            check("file_info inside is allowed", not is_error(r) and "kind: file" in text_of(r), text_of(r))
            r = await call("search_files", {"pattern": "needle"})
            check("search_files answers path:line: text",
                  not is_error(r) and "src/lib.txt:2: needle here" in text_of(r), text_of(r))

            # --- the newer file tools -------------------------------------------
            r = await call("edit_file", {"path": "edit.txt", "old_text": "three", "new_text": "THREE", "dry_run": True})
            with open(os.path.join(root, "edit.txt")) as f:
                unchanged = f.read() == "one\ntwo\nthree\n"
            check("edit_file dry run shows the diff and writes nothing",
                  not is_error(r) and "-three\n+THREE" in text_of(r) and unchanged, text_of(r))
            r = await call("write_file", {"path": "twice.txt", "content": "x\ny\nx\n"})
            r = await call("edit_file", {"path": "twice.txt", "old_text": "x", "new_text": "z"})
            check("edit_file refuses an ambiguous match naming the lines",
                  is_error(r) and "lines 1, 3" in text_of(r), text_of(r))
            r = await call("edit_file", {"path": "twice.txt", "old_text": "y", "new_text": "Y"})
            with open(os.path.join(root, "twice.txt")) as f:
                edited = f.read()
            check("edit_file replaces exactly and shows the diff",
                  not is_error(r) and edited == "x\nY\nx\n" and "+Y" in text_of(r), text_of(r) + edited)
            r = await call("edit_file", {"path": "escape/secret.txt", "old_text": "outside", "new_text": "x"})
            check("edit_file through a link outside is refused", is_error(r) and "outside secret" not in text_of(r), text_of(r))
            r = await call("read_many_files", {"paths": ["notes.txt", "escape/secret.txt", "src/lib.txt"]})
            t = text_of(r)
            check("read_many_files reads each and reports the refused one in place",
                  not is_error(r) and "hello notes" in t and "needle here" in t
                  and "outside secret" not in t and "==> escape/secret.txt <==" in t, t)
            r = await call("create_directory", {"path": "made/deeper"})
            check("create_directory inside", not is_error(r) and os.path.isdir(os.path.join(root, "made/deeper")), text_of(r))
            r = await call("create_directory", {"path": "escape/made"})
            check("create_directory through a link outside is refused",
                  is_error(r) and not os.path.exists(os.path.join(outside, "made")), text_of(r))
            r = await call("move_file", {"from": "notes.txt", "to": "made/notes.txt"})
            check("move_file inside", not is_error(r) and os.path.exists(os.path.join(root, "made/notes.txt")), text_of(r))
            r = await call("move_file", {"from": "twice.txt", "to": "made/notes.txt"})
            check("move_file never replaces", is_error(r) and os.path.exists(os.path.join(root, "twice.txt")), text_of(r))
            r = await call("move_file", {"from": "twice.txt", "to": "../outside/twice.txt"})
            check("move_file out of the root is refused",
                  is_error(r) and not os.path.exists(os.path.join(outside, "twice.txt")), text_of(r))
            r = await call("policy_info", {})
            check("policy_info shows the effective policy",
                  not is_error(r) and "sleep" in text_of(r) and root in text_of(r), text_of(r))

            # --- bounds, concurrency, cancellation ------------------------------
            # A bound on work, not on time: the walk stops at max_entries
            # (the default, 1000) and says so; the wait is only a guard
            # against a hang.
            r = await asyncio.wait_for(call("list_directory", {"path": "deep", "recursive": True}), 60)
            structured = attr(r, "structured_content", "structuredContent") or {}
            entries = structured.get("entries") or []
            check("a 4000-deep recursive listing stops at max_entries and says it is truncated",
                  not is_error(r) and structured.get("truncated") is True and 0 < len(entries) <= 1000,
                  f"{len(entries)} entries, truncated={structured.get('truncated')}")

            slow = asyncio.create_task(call("shell_command", {"argv": ["sleep", "2"]}))
            await asyncio.sleep(0.3)
            r = await call("read_file", {"path": "src/lib.txt"})
            check("a fast call is answered while a slow one runs",
                  not is_error(r) and not slow.done(), f"slow done: {slow.done()}")
            r = await slow
            check("the slow call finishes too", not is_error(r), text_of(r))

            # A distinctive duration names the command's process in /proc.
            cancelled = asyncio.create_task(session.call_tool("shell_command", {"argv": ["sleep", SLEEP]}))
            running = False
            for _ in range(50):
                await asyncio.sleep(0.1)
                if sleepers():
                    running = True
                    break
            check("the command to cancel is running", running, "no sleep process seen")
            cancel_started = time.monotonic()
            cancelled.cancel()
            try:
                await cancelled
            except asyncio.CancelledError:
                pass
            seen = None
            for _ in range(40):
                await asyncio.sleep(0.1)
                with open(log) as f:
                    records = [json.loads(line) for line in f if line.strip()]
                seen = [x for x in records if x.get("rule") == "cancelled"]
                if seen:
                    break
            check("notifications/cancelled stops a running call",
                  bool(seen) and seen[0]["duration_ms"] < 5000, seen)
            gone = False
            while time.monotonic() - cancel_started < 5:
                if not sleepers():
                    gone = True
                    break
                await asyncio.sleep(0.05)
            check("a cancelled shell_command's processes are gone",
                  gone, f"still running after {time.monotonic() - cancel_started:.2f}s: {sleepers()}")
            r = await call("read_file", {"path": "src/lib.txt"})
            check("the server still answers after a cancellation", not is_error(r), text_of(r))

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
            check("shell ls is allowed, its output under stdout:",
                  not is_error(r) and "\nstdout:\n" in text_of(r) and "edit.txt" in text_of(r), text_of(r))
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
            try:
                asyncio.run(asyncio.wait_for(run(binary, root, outside, server.server_address[1]), 120))
            finally:
                remove_deep(root)
    finally:
        server.shutdown()
    finish()


if __name__ == "__main__":
    main()
