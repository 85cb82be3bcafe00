#!/usr/bin/env python3
"""End-to-end test of approvals in `agentcaps mcp` with the official Python
MCP SDK as the client and its elicitation callback as the person.

A refusal whose rule the policy lists in `[approvals] ask` becomes an
`elicitation/create` form about the one exact action. Checked here: approve,
decline, cancel, a person who does not answer in time, `remember = "once"`
against `"session"`, a different action asked about again, a rule that is
not listed never asked, never-askable rules refused when the policy loads,
a client without elicitation, an approved command still confined (its
write to `.git/hooks/x` does not land), and the call log's lines.

Usage: mcp_approvals.py PATH_TO_AGENTCAPS_BINARY
Exit status 0 when every check passed; prints 'N passed, N failed'.
"""

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import re
import time

from checks import ClientSession, StdioServerParameters, check, finish, stdio_client, text_of, types
from mcp.client.streamable_http import streamable_http_client

CLIENT = "approvals-e2e-client"
TIMEOUT_MS = 1500
HOOK_WRITER = (
    "import os; open(os.path.join('.git', 'hooks', 'x'), 'w').write('pwned'); "
    "open('made.txt', 'w').write('ran')"
)

def policy_text(remember="once", ask='["not-allowed-program"]', extra="", timeout_ms=TIMEOUT_MS):
    return f"""
[files]
allowed = ["root"]

[shell]
working_directory = "root"
path_policy = true

[approvals]
ask = {ask}
remember = "{remember}"
timeout_ms = {timeout_ms}
{extra}"""


class Person:
    """The elicitation callback: answers from a script, records questions."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.questions = []

    async def __call__(self, context, params):
        self.questions.append(params)
        answer = self.answers.pop(0) if self.answers else "decline"
        if answer == "slow":
            await asyncio.sleep(TIMEOUT_MS / 1000 + 2)
            return types.ElicitResult(action="accept", content={"approve": True})
        if answer == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        if answer == "remember":
            return types.ElicitResult(action="accept", content={"approve": True, "remember": True})
        if answer == "accept-no":
            return types.ElicitResult(action="accept", content={"approve": False})
        return types.ElicitResult(action=answer)  # decline, cancel


@contextlib.asynccontextmanager
async def session(binary, top, name, policy, person=None):
    path = os.path.join(top, f"{name}.toml")
    with open(path, "w") as f:
        f.write(policy)
    log = os.path.join(top, f"{name}.log")
    params = StdioServerParameters(
        command=binary, args=["mcp", "--policy", path, "--log", log], cwd=os.path.join(top, "root")
    )
    info = types.Implementation(name=CLIENT, version="1.0")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=person, client_info=info) as s:
            await s.initialize()
            yield s, log


@contextlib.asynccontextmanager
async def http_server(binary, top, name, policy):
    """`agentcaps mcp --http 127.0.0.1:0`, its URL read from its stderr."""
    path = os.path.join(top, f"{name}.toml")
    with open(path, "w") as f:
        f.write(policy)
    log = os.path.join(top, f"{name}.log")
    err_path = os.path.join(top, f"{name}.err")
    with open(err_path, "w") as err:
        proc = subprocess.Popen([binary, "mcp", "--http", "127.0.0.1:0", "--policy", path, "--log", log],
                                cwd=os.path.join(top, "root"), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        url = None
        deadline = time.monotonic() + 20
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            with open(err_path) as f:
                m = re.search(r"at (http://[^ ]*:\d+/mcp)", f.read())
            url = m.group(1) if m else None
            await asyncio.sleep(0.05)
        if url is None:
            with open(err_path) as f:
                raise RuntimeError(f"the HTTP server did not start: {f.read()}")
        yield url, log
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.asynccontextmanager
async def http_session(url, person):
    """One Streamable HTTP session of the SDK (its own MCP session id)."""
    info = types.Implementation(name=CLIENT, version="1.0")
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1], elicitation_callback=person, client_info=info) as s:
            await s.initialize()
            yield s


def log_lines(log):
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


async def sort(s, *args, cwd=None):
    arguments = {"argv": ["sort", *args]}
    if cwd is not None:
        arguments["cwd"] = cwd
    return await s.call_tool("shell_command", arguments)


async def run(binary, top):
    root = os.path.join(top, "root")

    # Approve, once: the command runs, confined; the log has the question.
    person = Person("approve", "approve")
    async with session(binary, top, "approve", policy_text(), person) as (s, log):
        result = await sort(s, "names.txt")
        out = result.structured_content or {}
        check("approved: the command ran", not result.is_error and out.get("stdout") == "a\nb\n",
              text_of(result))
        check("approved: the command ran in its private view", out.get("enforced") == "full", out)
        q = person.questions[0] if person.questions else None
        message = q.message if q else ""
        check("the question names the tool, the rule and the exact action",
              "shell_command" in message and "not-allowed-program" in message
              and "`sort names.txt`" in message and root in message, message)
        schema = q.requested_schema if q else {}
        check("the form asks {approve: boolean}, without remember under `once`",
              schema.get("properties", {}).get("approve", {}).get("type") == "boolean"
              and "approve" in schema.get("required", []) and "remember" not in schema.get("properties", {}),
              schema)
        again = await sort(s, "names.txt")
        check("once: the same action is asked again", not again.is_error and len(person.questions) == 2,
              (text_of(again), len(person.questions)))
        listed = await s.call_tool("shell_command", {"command": "cat names.txt; id"})
        check("a refusal whose rule is not listed is never asked",
              listed.is_error and len(person.questions) == 2 and "shell-operator" in text_of(listed),
              text_of(listed))
    lines = [l for l in log_lines(log) if l.get("event") == "approval"]
    check("the call log has one line per question and answer", len(lines) == 2, lines)
    first = lines[0] if lines else {}
    check("a log line names tool, rule, action digest, answer and client",
          first.get("tool") == "shell_command" and first.get("rule") == "not-allowed-program"
          and len(first.get("action", "")) == 64 and first.get("answer") == "approved"
          and first.get("client") == CLIENT, first)
    check("the same action has the same digest",
          len(lines) == 2 and lines[0]["action"] == lines[1]["action"], lines)
    with open(log) as f:
        raw = f.read()
    check("the log holds the digest, never the arguments", "names.txt" not in raw, raw)

    # Decline, cancel, and "accept" with approve false: the usual refusal,
    # saying the person declined.
    for answer, name in [("decline", "declined"), ("cancel", "cancelled"), ("accept-no", "accepted with approve false")]:
        person = Person(answer)
        async with session(binary, top, f"no-{answer}", policy_text(), person) as (s, log):
            result = await sort(s, "names.txt")
            text = text_of(result)
            check(f"{name}: refused, the rule named, the person declined",
                  result.is_error and "not-allowed-program" in text and "declined" in text
                  and len(person.questions) == 1, text)
        lines = [l for l in log_lines(log) if l.get("event") == "approval"]
        expected = {"decline": "declined", "cancel": "cancelled", "accept-no": "declined"}[answer]
        check(f"{name}: the log has the answer", [l.get("answer") for l in lines] == [expected], lines)

    # No answer in time: refused when the timeout passes, not later.
    person = Person("slow")
    async with session(binary, top, "slow", policy_text(), person) as (s, log):
        started = time.monotonic()
        result = await sort(s, "names.txt")
        took = time.monotonic() - started
        text = text_of(result)
        check("timeout: refused, saying no answer came in time",
              result.is_error and "no answer in time" in text, text)
        check("timeout: the refusal comes when the timeout passes",
              TIMEOUT_MS / 1000 <= took < TIMEOUT_MS / 1000 + 1.5, took)
    lines = [l for l in log_lines(log) if l.get("event") == "approval"]
    check("timeout: the log has the answer", [l.get("answer") for l in lines] == ["timed-out"], lines)

    # Session memory: a remembered action is not asked again; another one is.
    person = Person("remember", "approve", "approve", "approve")
    async with session(binary, top, "session", policy_text("session"), person) as (s, log):
        first = await sort(s, "names.txt")
        schema = person.questions[0].requested_schema if person.questions else {}
        check("session: the form offers remember",
              schema.get("properties", {}).get("remember", {}).get("type") == "boolean", schema)
        second = await sort(s, "names.txt")
        check("session: the remembered action runs without a question",
              not first.is_error and not second.is_error and len(person.questions) == 1,
              (text_of(second), len(person.questions)))
        other = await sort(s, "-r", "names.txt")
        check("session: a different argv is asked again",
              not other.is_error and len(person.questions) == 2, len(person.questions))
        moved = await sort(s, "names.txt", cwd="sub")
        check("session: the same argv in another directory is asked again",
              len(person.questions) == 3, (text_of(moved), len(person.questions)))
        once = await sort(s, "-r", "names.txt")
        check("session: an action approved without remember is asked again",
              not once.is_error and len(person.questions) == 4, len(person.questions))
        uniq = await s.call_tool("shell_command", {"argv": ["uniq", "names.txt"]})
        check("session: another program is asked about (and declined)",
              uniq.is_error and "declined" in text_of(uniq) and len(person.questions) == 5, text_of(uniq))
    answers = [l.get("answer") for l in log_lines(log) if l.get("event") == "approval"]
    check("session: the log shows the remembered use",
          answers == ["approved-session", "remembered", "approved", "approved", "approved", "declined"],
          answers)

    # A client without elicitation: the usual refusal naming approval-unavailable.
    async with session(binary, top, "no-elicitation", policy_text(), None) as (s, log):
        result = await sort(s, "names.txt")
        text = text_of(result)
        check("no elicitation: refused, naming approval-unavailable and the rule",
              result.is_error and "approval-unavailable" in text and "not-allowed-program" in text, text)
    lines = [l for l in log_lines(log) if l.get("event") == "approval"]
    check("no elicitation: logged as unavailable",
          [(l.get("answer"), l.get("client")) for l in lines] == [("unavailable", CLIENT)], lines)
    calls = [l for l in log_lines(log) if "decision" in l]
    check("no elicitation: the call is a deny under approval-unavailable",
          [(c["decision"], c["rule"]) for c in calls] == [("deny", "approval-unavailable")], calls)

    # An approved command is still confined: judged at write-back.
    person = Person("approve")
    async with session(binary, top, "confined", policy_text(), person) as (s, log):
        result = await s.call_tool("shell_command", {"argv": ["python3", "-c", HOOK_WRITER]})
        out = result.structured_content or {}
        changes = out.get("changes") or {}
        refused = [c for c in changes.get("refused", []) if c.get("path") == ".git/hooks/x"]
        check("confined: the approved command ran with enforced full",
              not result.is_error and out.get("enforced") == "full" and out.get("exit_code") == 0,
              (text_of(result), out))
        check("confined: its write to .git/hooks/x was refused at write-back",
              len(refused) == 1 and refused[0].get("rule") == "write-protected", changes)
        check("confined: .git/hooks/x did not land, made.txt did",
              not os.path.exists(os.path.join(root, ".git", "hooks", "x"))
              and os.path.exists(os.path.join(root, "made.txt")), os.listdir(os.path.join(root, ".git", "hooks")))

    # Over HTTP every client session has its own memory: a "yes" remembered
    # in one session is not another's, even at the same time on one server.
    async with http_server(binary, top, "http-sessions", policy_text("session")) as (url, log):
        first_person, second_person = Person("remember"), Person("decline")
        async with http_session(url, first_person) as first:
            approved = await sort(first, "names.txt")
            again = await sort(first, "names.txt")
            check("http session one: approved and remembered",
                  not approved.is_error and not again.is_error and len(first_person.questions) == 1,
                  (text_of(again), len(first_person.questions)))
            async with http_session(url, second_person) as second:
                other = await sort(second, "names.txt")
                check("http session two (open at the same time): asked again, not the first one's yes",
                      other.is_error and "declined" in text_of(other) and len(second_person.questions) == 1
                      and len(first_person.questions) == 1,
                      (text_of(other), len(second_person.questions), len(first_person.questions)))
            still = await sort(first, "names.txt")
            check("http session one still remembers its own yes",
                  not still.is_error and len(first_person.questions) == 1, text_of(still))
        third_person = Person("decline")
        async with http_session(url, third_person) as third:
            later = await sort(third, "names.txt")
            check("http: a later session is asked again",
                  later.is_error and len(third_person.questions) == 1, text_of(later))
    answers = [l.get("answer") for l in log_lines(log) if l.get("event") == "approval"]
    check("http sessions: the log shows each session's answers",
          answers == ["approved-session", "remembered", "declined", "remembered", "declined"], answers)

    # Never-askable rules (and IDs that are no rule) are a policy error at load.
    for rule in ["blocked", "nul", "address.special-purpose", "credential-unbound", "view-failed", "no-such-rule"]:
        path = os.path.join(top, "bad.toml")
        with open(path, "w") as f:
            f.write(f'[approvals]\nask = [\n  "not-allowed-program",\n  "{rule}",\n]\n')
        done = subprocess.run([binary, "mcp", "--policy", path], cwd=root, input="", capture_output=True,
                              text=True, timeout=20)
        check(f"never askable `{rule}`: the server does not start; file and line named",
              done.returncode == 2 and "bad.toml" in done.stderr and "line 4" in done.stderr
              and rule in done.stderr, (done.returncode, done.stderr))


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as top:
        root = os.path.join(top, "root")
        os.makedirs(os.path.join(root, ".git", "hooks"))
        os.makedirs(os.path.join(root, "sub"))
        for d in [root, os.path.join(root, "sub")]:
            with open(os.path.join(d, "names.txt"), "w") as f:
                f.write("b\na\n")
        asyncio.run(run(binary, top))
    finish()


if __name__ == "__main__":
    main()
