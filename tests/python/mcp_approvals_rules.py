#!/usr/bin/env python3
"""End-to-end test of the askable rules besides `not-allowed-program`, with
the official Python MCP SDK as the client and its elicitation callback as
the person: `unknown-option` (shell_command), `name.not-allowed`
(http_request, against a DNS server and an HTTP server on loopback) and
`write-protected` (write_file, edit_file, and a command's write-back: the
approved change lands with the run's other changes, a declined one not at
all, git's own code never). For each: approve, decline,
`once` against `session`, a different action asked again, a client without
elicitation (approval-unavailable), and the call log's lines.

Usage: mcp_approvals_rules.py PATH_TO_AGENTCAPS_BINARY
Exit status 0 when every check passed; prints 'N passed, N failed'.
"""

import asyncio
import http.server
import os
import socket
import struct
import sys
import tempfile
import threading

from checks import check, finish, send_text, text_of
from mcp_approvals import CLIENT, Person, log_lines, session
from mcp_approvals import policy_text as approvals_policy

TIMEOUT_MS = 5000


def policy_text(ask, remember="once", extra=""):
    return approvals_policy(remember, f'["{ask}"]', extra, TIMEOUT_MS)


def approvals(log):
    return [(l.get("tool"), l.get("rule"), l.get("answer"), l.get("client"))
            for l in log_lines(log) if l.get("event") == "approval"]


def digests(log):
    return [l.get("action") for l in log_lines(log) if l.get("event") == "approval"]


class Dns(threading.Thread):
    """A DNS server on loopback: every A query is answered 127.0.0.1, every
    other query with no records."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.names = []

    def run(self):
        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            if len(data) < 12:
                continue
            at, labels = 12, []
            while at < len(data) and data[at] != 0:
                n = data[at]
                labels.append(data[at + 1:at + 1 + n].decode(errors="replace"))
                at += 1 + n
            question = data[12:at + 5]
            qtype = struct.unpack(">H", data[at + 1:at + 3])[0] if at + 3 <= len(data) else 0
            self.names.append(".".join(labels).lower())
            answers = b""
            count = 0
            if qtype == 1:
                answers = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.1")
                count = 1
            header = data[:2] + struct.pack(">HHHHH", 0x8180, 1, count, 0, 0)
            self.sock.sendto(header + question + answers, peer)


class Site(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_GET(self):
        Site.seen.append(self.path)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/hello")
            self.end_headers()
            return
        send_text(self, "hello from the approved host")

    def log_message(self, *args):
        pass


async def unknown_option(binary, top):
    async def wc(s, *args):
        return await s.call_tool("shell_command", {"argv": ["wc", *args, "names.txt"]})

    person = Person("approve", "decline")
    async with session(binary, top, "uo-once", policy_text("unknown-option"), person) as (s, log):
        ran = await wc(s, "--frobnicate")
        out = ran.structured_content or {}
        check("unknown-option approved: the command ran in its view with the option as given",
              not ran.is_error and "frobnicate" in out.get("stderr", "") and out.get("enforced") == "full",
              (text_of(ran), out))
        q = person.questions[0].message if person.questions else ""
        check("unknown-option: the question names the rule and the exact command",
              "unknown-option" in q and "`wc --frobnicate names.txt`" in q, q)
        again = await wc(s, "--frobnicate")
        check("unknown-option once: asked again, and declined",
              again.is_error and "declined" in text_of(again) and "unknown-option" in text_of(again)
              and len(person.questions) == 2, text_of(again))
    check("unknown-option: the log has each question and answer",
          approvals(log) == [("shell_command", "unknown-option", "approved", CLIENT),
                             ("shell_command", "unknown-option", "declined", CLIENT)], approvals(log))

    person = Person("remember", "decline")
    async with session(binary, top, "uo-session", policy_text("unknown-option", "session"), person) as (s, log):
        first = await wc(s, "--frobnicate")
        second = await wc(s, "--frobnicate")
        check("unknown-option session: remembered, not asked again",
              not first.is_error and not second.is_error and len(person.questions) == 1, text_of(second))
        other = await wc(s, "--other")
        check("unknown-option session: another option is asked about",
              other.is_error and len(person.questions) == 2, text_of(other))
    check("unknown-option session: the log shows the remembered use",
          [a[2] for a in approvals(log)] == ["approved-session", "remembered", "declined"], approvals(log))

    async with session(binary, top, "uo-none", policy_text("unknown-option"), None) as (s, log):
        refused = await wc(s, "--frobnicate")
        check("unknown-option without elicitation: approval-unavailable and the rule named",
              refused.is_error and "approval-unavailable" in text_of(refused)
              and "unknown-option" in text_of(refused), text_of(refused))
    check("unknown-option without elicitation: logged as unavailable",
          [a[2] for a in approvals(log)] == ["unavailable"], approvals(log))


async def write_protected(binary, top):
    root = os.path.join(top, "root")
    hook = os.path.join(root, ".git", "hooks", "pre-commit")

    async def write(s, path, content):
        return await s.call_tool("write_file", {"path": path, "content": content, "overwrite": True})

    person = Person("approve", "decline")
    async with session(binary, top, "wp-once", policy_text("write-protected"), person) as (s, log):
        wrote = await write(s, ".git/hooks/pre-commit", "#!/bin/sh\necho approved\n")
        with open(hook) if os.path.exists(hook) else open(os.devnull) as f:
            landed = f.read()
        check("write-protected approved: the file landed",
              not wrote.is_error and landed == "#!/bin/sh\necho approved\n", (text_of(wrote), landed))
        q = person.questions[0].message if person.questions else ""
        check("write-protected: the question names the rule and the real location",
              "write-protected" in q and f"write {hook}" in q, q)
        again = await write(s, ".git/hooks/pre-commit", "#!/bin/sh\necho declined\n")
        with open(hook) as f:
            kept = f.read()
        check("write-protected once: asked again, declined, nothing written",
              again.is_error and "declined" in text_of(again) and kept == landed
              and len(person.questions) == 2, text_of(again))
    check("write-protected: the log has each question and answer",
          approvals(log) == [("write_file", "write-protected", "approved", CLIENT),
                             ("write_file", "write-protected", "declined", CLIENT)], approvals(log))

    person = Person("remember", "decline", "approve")
    async with session(binary, top, "wp-session", policy_text("write-protected", "session"), person) as (s, log):
        first = await write(s, ".git/hooks/pre-commit", "one\n")
        second = await write(s, "./.git/hooks/pre-commit", "two\n")
        check("write-protected session: the same location, however spelled, is not asked again",
              not first.is_error and not second.is_error and len(person.questions) == 1, text_of(second))
        other = await write(s, ".git/hooks/post-checkout", "x\n")
        check("write-protected session: another location is asked about (declined, not written)",
              other.is_error and len(person.questions) == 2
              and not os.path.exists(os.path.join(root, ".git", "hooks", "post-checkout")), text_of(other))
        edit = await s.call_tool("edit_file", {"path": ".github/workflows/ci.yml", "old_text": "on: push",
                                               "new_text": "on: pull_request"})
        with open(os.path.join(root, ".github", "workflows", "ci.yml")) as f:
            edited = f.read()
        check("write-protected: edit_file asks about its file, approved, the edit lands",
              not edit.is_error and len(person.questions) == 3 and "pull_request" in edited, text_of(edit))
    answers = approvals(log)
    check("write-protected session: the log shows the remembered use",
          [a[2] for a in answers] == ["approved-session", "remembered", "declined", "approved"]
          and answers[3][0] == "edit_file", answers)
    with open(log) as f:
        raw = f.read()
    check("write-protected: the log holds digests, never the path", "pre-commit" not in raw, raw)

    async with session(binary, top, "wp-none", policy_text("write-protected"), None) as (s, log):
        refused = await write(s, ".git/hooks/pre-push", "x\n")
        check("write-protected without elicitation: approval-unavailable, nothing written",
              refused.is_error and "approval-unavailable" in text_of(refused)
              and not os.path.exists(os.path.join(root, ".git", "hooks", "pre-push")), text_of(refused))


WORKFLOW_WRITER = (
    "import os; open(os.path.join('.github', 'workflows', 'ci.yml'), 'w').write('on: approved'); "
    "open(os.path.join('.git', 'hooks', 'post-merge'), 'w').write('pwned'); "
    "open('made-{0}.txt', 'w').write('ran')"
)


async def write_back(binary, top):
    root = os.path.join(top, "root")
    workflow = os.path.join(root, ".github", "workflows", "ci.yml")
    hook = os.path.join(root, ".git", "hooks", "post-merge")
    ask = '["not-allowed-program", "write-protected"]'

    async def run(s, tag):
        return await s.call_tool("shell_command", {"argv": ["python3", "-c", WORKFLOW_WRITER.format(tag)]})

    def read(path):
        with open(path) as f:
            return f.read()

    for answer, tag in [("approve", "yes"), ("decline", "no")]:
        person = Person("approve", answer)
        policy = approvals_policy("once", ask, "", TIMEOUT_MS)
        async with session(binary, top, f"wb-{tag}", policy, person) as (s, log):
            with open(workflow, "w") as f:
                f.write("on: push\n")
            result = await run(s, tag)
            out = result.structured_content or {}
            changes = out.get("changes") or {}
            refused = {c.get("path"): c.get("rule") for c in changes.get("refused", [])}
            applied = [c.get("path") for c in changes.get("applied", [])]
            q = person.questions[1].message if len(person.questions) > 1 else ""
            check(f"write-back {answer}: the person is asked about the run's write-protected change",
                  len(person.questions) == 2 and "write-protected" in q and ".github/workflows/ci.yml" in q
                  and ".git/hooks/post-merge (" not in q and "post-merge\n" not in q
                  and q.split("\n")[1].endswith(": modify .github/workflows/ci.yml"), q)
            if answer == "approve":
                check("write-back approved: the workflow landed with the run's other changes",
                      read(workflow) == "on: approved" and os.path.exists(os.path.join(root, "made-yes.txt"))
                      and ".github/workflows/ci.yml" in applied and "made-yes.txt" in applied,
                      (read(workflow), applied, refused))
            else:
                check("write-back declined: the workflow did not land, the other change did, it is listed",
                      read(workflow) == "on: push\n" and os.path.exists(os.path.join(root, "made-no.txt"))
                      and refused.get(".github/workflows/ci.yml") == "write-protected",
                      (read(workflow), applied, refused))
            check(f"write-back {answer}: the hook (git's own code) never lands and is never asked about",
                  not os.path.exists(hook) and refused.get(".git/hooks/post-merge") == "write-protected"
                  and out.get("enforced") == "full", (refused, out.get("enforced")))
        expected = "approved" if answer == "approve" else "declined"
        check(f"write-back {answer}: the log has the question and the answer",
              approvals(log)[1:] == [("shell_command", "write-protected", expected, CLIENT)], approvals(log))

    async with session(binary, top, "wb-none", approvals_policy("once", '["write-protected"]', "", TIMEOUT_MS),
                       None) as (s, log):
        with open(workflow, "w") as f:
            f.write("on: push\n")
        result = await s.call_tool("shell_command", {"command": "sed -i s/push/none/ .github/workflows/ci.yml"})
        check("write-back without elicitation: the workflow does not land",
              read(workflow) == "on: push\n", (text_of(result), read(workflow)))


async def name_not_allowed(binary, top, dns, port):
    egress = f"""
[egress]
allowed_domains = ["allowed.example.com"]
allowed_cidrs = ["127.0.0.0/8"]
allowed_ports = [{port}]
allowed_methods = ["GET", "HEAD"]
dns_servers = ["127.0.0.1:{dns.port}"]
"""
    url = f"http://other.example.com:{port}/hello"

    async def get(s, target, method=None):
        arguments = {"url": target}
        if method:
            arguments["method"] = method
        return await s.call_tool("http_request", arguments)

    person = Person("approve", "decline", "approve")
    async with session(binary, top, "nn-once", policy_text("name.not-allowed", extra=egress), person) as (s, log):
        Site.seen.clear()
        got = await get(s, url)
        out = got.structured_content or {}
        check("name.not-allowed approved: the request went to that host",
              not got.is_error and out.get("status") == 200 and "approved host" in out.get("body", "")
              and "other.example.com" in dns.names, (text_of(got), dns.names))
        q = person.questions[0].message if person.questions else ""
        check("name.not-allowed: the question names the rule and the exact method and URL",
              "name.not-allowed" in q and f"send GET {url}" in q, q)
        again = await get(s, url)
        check("name.not-allowed once: asked again, and declined",
              again.is_error and "declined" in text_of(again) and "name.not-allowed" in text_of(again)
              and len(person.questions) == 2, text_of(again))
        Site.seen.clear()
        moved = await get(s, f"http://other.example.com:{port}/redirect")
        check("name.not-allowed: an approved URL's redirect is not followed",
              moved.is_error and Site.seen == ["/redirect"], (text_of(moved), Site.seen))
        asked = len(person.questions)
        for target, rule in [(f"http://localhost:{port}/hello", "name.special-use"),
                             (f"http://intranet:{port}/hello", "name.single-label")]:
            local = await get(s, target)
            check(f"name.not-allowed listed: a {rule} refusal is never asked about",
                  local.is_error and rule in text_of(local) and len(person.questions) == asked, text_of(local))
    check("name.not-allowed: the log has each question and answer",
          approvals(log) == [("http_request", "name.not-allowed", "approved", CLIENT),
                             ("http_request", "name.not-allowed", "declined", CLIENT),
                             ("http_request", "name.not-allowed", "approved", CLIENT)], approvals(log))

    person = Person("remember", "decline", "decline")
    async with session(binary, top, "nn-session", policy_text("name.not-allowed", "session", egress), person) as (s, log):
        first = await get(s, url)
        second = await get(s, url)
        check("name.not-allowed session: the same request is not asked again",
              not first.is_error and not second.is_error and len(person.questions) == 1, text_of(second))
        other = await get(s, f"http://other.example.com:{port}/other")
        check("name.not-allowed session: another URL on the same host is asked about",
              other.is_error and len(person.questions) == 2, text_of(other))
        head = await get(s, url, "HEAD")
        check("name.not-allowed session: another method is asked about",
              head.is_error and len(person.questions) == 3, text_of(head))
    check("name.not-allowed session: the log shows the remembered use",
          [a[2] for a in approvals(log)] == ["approved-session", "remembered", "declined", "declined"],
          approvals(log))
    ds = digests(log)
    check("name.not-allowed: one digest per exact request",
          len(ds) == 4 and ds[0] == ds[1] and len({ds[1], ds[2], ds[3]}) == 3, ds)

    async with session(binary, top, "nn-none", policy_text("name.not-allowed", extra=egress), None) as (s, log):
        refused = await get(s, url)
        check("name.not-allowed without elicitation: approval-unavailable and the rule named",
              refused.is_error and "approval-unavailable" in text_of(refused)
              and "name.not-allowed" in text_of(refused), text_of(refused))


def main():
    binary = sys.argv[1]
    dns = Dns()
    dns.start()
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as top:
            root = os.path.join(top, "root")
            os.makedirs(os.path.join(root, ".git", "hooks"))
            os.makedirs(os.path.join(root, ".github", "workflows"))
            with open(os.path.join(root, "names.txt"), "w") as f:
                f.write("b\na\n")
            with open(os.path.join(root, ".github", "workflows", "ci.yml"), "w") as f:
                f.write("on: push\n")
            asyncio.run(unknown_option(binary, top))
            asyncio.run(write_protected(binary, top))
            asyncio.run(write_back(binary, top))
            asyncio.run(name_not_allowed(binary, top, dns, site.server_address[1]))
    finally:
        site.shutdown()
    finish()


if __name__ == "__main__":
    main()
