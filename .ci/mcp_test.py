"""CI's test of `rag.py --mcp` with the official MCP Python SDK's own client, as an assistant would use it.

    /tmp/rag-mcp-v2/bin/python .ci/mcp_test.py    # mcp 2.x: its Client (server/discover, the 2026-07-28 era)
    /tmp/rag-mcp-v1/bin/python .ci/mcp_test.py    # mcp 1.x: ClientSession (the initialize handshake)

Starts the Ollama stand-in of ../shared (hash embeddings) for the ask tool, then rag.py --mcp over stdio on a
folder with the handbook, and through the SDK: lists the tools, calls each, makes bad calls (an unknown tool,
a wrong type, a missing argument, an --only term that keeps nothing), lists and reads the documents as
resources. Any warning or log record of WARNING or above from the SDK fails a check. Prints a line a check
and "N passed, N failed" last; the exit code is 1 when one failed.
"""
import asyncio
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STAND_IN = os.path.join(ROOT, "..", "shared", "ollama-stand-in", "fake_ollama.py")

import mcp  # noqa: E402 (after the paths: it is not in the standard library)
from mcp.client.stdio import StdioServerParameters  # noqa: E402

checks, records = [], []


def check(name, condition, detail=""):
    checks.append(bool(condition))
    print(("ok    " if condition else "FAIL  ") + name + ("" if condition else f": {detail}"), flush=True)


class Keep(logging.Handler):
    def emit(self, record):
        records.append(record)


def attr(thing, name):
    """A field of a result: v2 names them in snake_case (is_error), v1 as the wire does (isError)."""
    snake = re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), name)
    return getattr(thing, snake) if hasattr(thing, snake) else getattr(thing, name)


def text_of(result):
    return "".join(part.text for part in result.content if getattr(part, "type", "") == "text")


async def session(params, body):
    """Run body(client) with a connected client of the SDK installed: v2's Client, else v1's ClientSession."""
    try:
        from mcp.client.client import Client
    except ImportError:
        Client = None
    if Client is not None:
        async with Client(params) as client:
            check(f"connected (mcp {version()}, protocol {client.protocol_version})", client.protocol_version)
            await body(client)
        return
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            started = await client.initialize()
            check(f"connected (mcp {version()}, protocol {started.protocolVersion})", started.serverInfo.name == "rag.py")
            await body(client)


def version():
    from importlib.metadata import version as of
    return of("mcp")


async def calls(client):
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    check("the tools are listed, each with a JSON Schema", sorted(tools) == ["ask", "list_documents", "passage", "search"]
          and all(attr(tool, "inputSchema").get("type") == "object" and tool.description for tool in tools.values()), sorted(tools))

    found = await client.call_tool("search", {"question": "When do I have to file my expense report?", "k": 3})
    hits = (attr(found, "structuredContent") or {}).get("hits", [])
    check("search finds the deadline first, with source, lines and heading",
          not attr(found, "isError") and hits and hits[0]["heading"] == "Expenses > Deadlines and late submissions"
          and hits[0]["source"] == "handbook.txt" and len(hits) == 3 and "[1] handbook.txt:" in text_of(found), text_of(found)[:300])

    whole = await client.call_tool("passage", {"source": "handbook.txt", "line": hits[0]["lines"][0] if hits else 1})
    check("passage gives the hit's whole text", not attr(whole, "isError") and hits and hits[0]["text"] in text_of(whole), text_of(whole)[:200])

    listed = await client.call_tool("list_documents", {})
    check("list_documents names the handbook with its lines", "handbook.txt: lines 1-" in text_of(listed), text_of(listed))

    answered = await client.call_tool("ask", {"question": "When do I have to file my expense report?"})
    line = attr(answered, "structuredContent") or {}
    check("ask answers through the model server, with citations, passages and the check",
          not attr(answered, "isError") and line.get("answer") and line.get("hits") and "check" in line and "Sources:" in text_of(answered),
          text_of(answered)[:300])

    for name, arguments, said in [("search", {"question": "x", "k": "five"}, "k must be an integer"),
                                  ("search", {}, "'question' is missing"),
                                  ("search", {"question": "deadline", "only": ["*.nothing"]}, "no document is within")]:
        bad = await client.call_tool(name, arguments)
        check(f"a bad call is an error result that says what was wrong ({said})", attr(bad, "isError") and said in text_of(bad), text_of(bad))
    try:
        unknown = await client.call_tool("delete_everything", {})
        check("an unknown tool is refused", attr(unknown, "isError"), text_of(unknown))
    except Exception as e:  # the protocol's error (-32602): the SDK raises it
        check("an unknown tool is refused with the protocol's error", "no tool" in str(e), e)

    resources = (await client.list_resources()).resources
    check("the documents are resources", [r.name for r in resources] == ["handbook.txt"], resources)
    read = await client.read_resource(resources[0].uri) if resources else None
    check("a document is read whole", read and "Expense reports must be filed within 30 days" in read.contents[0].text)

    after = await client.call_tool("search", {"question": "per diem Japan"})
    check("the server goes on after bad calls", not attr(after, "isError") and attr(after, "structuredContent")["hits"])


def main():
    warnings.simplefilter("always")
    logging.captureWarnings(True)
    logging.getLogger().addHandler(Keep(logging.WARNING))
    docs, cache = tempfile.mkdtemp(prefix="rag-mcp-"), tempfile.mkdtemp(prefix="rag-mcp-cache-")
    shutil.copy(os.path.join(ROOT, "handbook.txt"), docs)
    stand_in = subprocess.Popen([sys.executable, STAND_IN, "--port", "0", "--hash-embeddings"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    try:
        port = stand_in.stdout.readline().strip().split("=", 1)[1]
        params = StdioServerParameters(command=sys.executable, args=[os.path.join(ROOT, "rag.py"), "--mcp", "--docs", docs,
                                                                     "--cache", cache, "--host", f"127.0.0.1:{port}"])
        asyncio.run(session(params, calls))
    except Exception as e:  # the session itself failed: that is a failed check, with what was said
        while getattr(e, "exceptions", None):  # a TaskGroup's: the first one inside
            e = e.exceptions[0]
        check("the session ran to its end", False, f"{type(e).__name__}: {e}")
    finally:
        stand_in.terminate()
        shutil.rmtree(docs, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    check("no warning from the SDK", not records, [f"{r.levelname} {r.name}: {r.getMessage()}" for r in records][:3])
    print(f"{sum(checks)} passed, {len(checks) - sum(checks)} failed")
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
