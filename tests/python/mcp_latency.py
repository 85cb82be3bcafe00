#!/usr/bin/env python3
"""Per-call latency of `read_file` over MCP (stdio), two server binaries
measured in the same run, alternating, with the official Python MCP SDK.

Usage: mcp_latency.py BINARY_A BINARY_B [ROUNDS [CALLS]]

Each binary serves the same policy and file; after a warm-up, ROUNDS
rounds (default 10) of CALLS calls (default 200) run against A then B, so
drift on a shared machine falls on both. Prints the median and the 10th
and 90th percentiles of each and the ratio of the medians (B / A).
"""

import asyncio
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def open_session(stack, binary, root, policy):
    params = StdioServerParameters(
        command=binary, args=["mcp", "--policy", policy, "--log", os.devnull], cwd=root
    )
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def calls(session, n, out):
    for _ in range(n):
        started = time.perf_counter()
        result = await session.call_tool("read_file", {"path": "file.txt"})
        out.append(time.perf_counter() - started)
        if result.is_error:
            raise SystemExit(f"read_file failed: {result.content}")


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(a, b, rounds, per_round):
    with tempfile.TemporaryDirectory() as top:
        root = os.path.join(top, "root")
        os.makedirs(root)
        with open(os.path.join(root, "file.txt"), "w") as f:
            f.writelines(f"line {i} of the file\n" for i in range(200))
        policy = os.path.join(top, "policy.toml")
        with open(policy, "w") as f:
            f.write('[files]\nallowed = ["root"]\n')
        async with AsyncExitStack() as stack:
            sessions = [await open_session(stack, binary, root, policy) for binary in (a, b)]
            times = [[], []]
            for session in sessions:
                await calls(session, 50, [])
            for _ in range(rounds):
                for session, out in zip(sessions, times):
                    await calls(session, per_round, out)
    for name, binary, out in zip("AB", (a, b), times):
        print(f"{name} {binary}: median {statistics.median(out) * 1e6:.0f} us, "
              f"p10 {quantile(out, 0.1) * 1e6:.0f} us, p90 {quantile(out, 0.9) * 1e6:.0f} us, n={len(out)}")
    print(f"ratio of medians B/A: {statistics.median(times[1]) / statistics.median(times[0]):.3f}")


if __name__ == "__main__":
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    per_round = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    asyncio.run(main(sys.argv[1], sys.argv[2], rounds, per_round))
