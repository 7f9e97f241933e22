"""A stand-in for the model APIs of three MCP clients, on loopback.

One HTTP server speaks, by path:
- the Anthropic Messages API (`POST /v1/messages`, server-sent events or
  one JSON message) for Claude Code;
- the OpenAI Responses API (`POST /v1/responses`, server-sent events) for
  Codex;
- Gemini's `:streamGenerateContent` (server-sent events with `alt=sse`, or
  a JSON array) and `:generateContent` for Gemini CLI.

It plays a model that follows a plan: a list of tool calls (one of our
four tools and its arguments). Stateless, it reads its place in the plan
from the request itself: a conversation holding k tool results is answered
with the call k of the plan, and once the plan is done with a closing text.
A request that offers none of the plan's tools (a client's side request:
a title, a summary, a check) gets a short text.

What it records, per tool result, is what the client handed its model: the
text of the result as the request carries it. `Standin.results()` gives
them in the plan's order. A tool is named the way the client declares it
(`mcp__sessions__read_session`, `sessions__read_session`, ...): the
declared name that ends with the plan's name.

It also answers `CONNECT` (and proxied requests) with 403, noting the host:
pointed at it as HTTP(S)_PROXY, a client's stray traffic fails at once and
shows up in `Standin.stray`.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLOSING_TEXT = "All tools called."
SIDE_TEXT = "ok"


def declared(names, tool):
    """The name among `names` a client gave `tool` (exact, or ending in a separator and `tool`)."""
    for n in names:
        if n == tool or n.endswith("__" + tool) or n.endswith("_" + tool) or n.endswith("." + tool):
            return n
    return None


def text_of(value):
    """The text a model reads of a tool result's content, whatever the wire shape: a string as
    it is; a list of parts, their texts; an object (Gemini's functionResponse.response), its
    strings; joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value["text"]] if isinstance(value.get("text"), str) else list(value.values())
    if isinstance(value, list):
        return "\n".join(text_of(v) for v in value)
    return json.dumps(value)


class Plan:
    """The tool calls to make, in order: (tool, arguments) pairs. An argument value given as a
    callable is called with the request's headers and body (to name what only the request
    tells, such as the client's own session id)."""

    def __init__(self, calls):
        self.calls = list(calls)

    def arguments(self, step, headers, body):
        tool, args = self.calls[step]
        return tool, {k: (v(headers, body) if callable(v) else v) for k, v in args.items()}


class Standin:
    """The server; `start()` binds 127.0.0.1 on a free port (`self.url`)."""

    def __init__(self, plan):
        self.plan = plan
        self.lock = threading.Lock()
        self.recorded = {}  # step -> text handed to the model
        self.requests = []  # (path, headers, body) of every model request
        self.issued = []  # (step, declared tool name, arguments)
        self.stray = []  # hosts a client tried to reach through the proxy
        self.errors = []

    def start(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_CONNECT(self):
                standin.note_stray(self.path)
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                if self.path.startswith("http"):
                    standin.note_stray(self.path)
                    return self.reply(403, {"error": "no network"})
                self.reply(404, {"error": f"not served: {self.path}"})

            def do_POST(self):
                if self.path.startswith("http"):
                    standin.note_stray(self.path)
                    return self.reply(403, {"error": "no network"})
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self.reply(400, {"error": "not JSON"})
                headers = {k.lower(): v for k, v in self.headers.items()}
                with standin.lock:
                    standin.requests.append((self.path, headers, body))
                try:
                    path = self.path.split("?")[0]
                    if path.endswith("/messages"):
                        standin.anthropic(self, headers, body)
                    elif path.endswith("/responses"):
                        standin.openai(self, headers, body)
                    elif ":streamGenerateContent" in path or ":generateContent" in path:
                        standin.gemini(self, headers, body, stream=":stream" in path, sse="alt=sse" in self.path)
                    elif path.endswith(":countTokens") or path.endswith("/count_tokens"):
                        self.reply(200, {"totalTokens": 1, "input_tokens": 1})
                    else:
                        self.reply(404, {"error": f"not served: {self.path}"})
                except Exception as e:  # a bug of the stand-in: recorded, and the client told
                    standin.errors.append(f"{self.path}: {e!r}")
                    self.reply(500, {"error": repr(e)})

            def reply(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def events(self, events):
                """Server-sent events: (name or None, data object) pairs, then the end."""
                chunks = []
                for name, data in events:
                    head = f"event: {name}\n" if name else ""
                    chunks.append(f"{head}data: {json.dumps(data)}\n\n")
                data = "".join(chunks).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def note_stray(self, target):
        with self.lock:
            self.stray.append(target)

    def results(self):
        """The texts handed to the model, in the plan's order (None where none arrived)."""
        with self.lock:
            return [self.recorded.get(i) for i in range(len(self.plan.calls))]

    def next_call(self, tool_names, results, headers, body):
        """Records `results` (the texts of the tool results the request holds, in order) and says
        what to answer: None for a side request, ("text", CLOSING_TEXT) when the plan is done,
        else ("call", step, declared name, arguments)."""
        with self.lock:
            for i, text in enumerate(results[: len(self.plan.calls)]):
                self.recorded.setdefault(i, text)
        step = len(results)
        if declared(tool_names, self.plan.calls[0][0]) is None:
            return None
        if step >= len(self.plan.calls):
            return ("text", CLOSING_TEXT)
        tool, args = self.plan.arguments(step, headers, body)
        name = declared(tool_names, tool)
        if name is None:
            raise ValueError(f"the client offers no tool {tool!r}: {sorted(tool_names)}")
        with self.lock:
            self.issued.append((step, name, args))
        return ("call", step, name, args)

    # --- Anthropic Messages ---------------------------------------------------

    def anthropic(self, h, headers, body):
        names = [t.get("name", "") for t in body.get("tools") or []]
        results = [text_of(block.get("content", ""))
                   for m in body.get("messages", []) if m.get("role") == "user" and isinstance(m.get("content"), list)
                   for block in m["content"] if block.get("type") == "tool_result"]
        answer = self.next_call(names, results, headers, body)
        if answer is None or answer[0] == "text":
            block, stop = {"type": "text", "text": SIDE_TEXT if answer is None else answer[1]}, "end_turn"
        else:
            _, step, name, args = answer
            block, stop = {"type": "tool_use", "id": f"toolu_step{step}", "name": name, "input": args}, "tool_use"
        message = {"id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant",
                   "model": body.get("model", "stand-in"), "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not body.get("stream"):
            return h.reply(200, {**message, "content": [block], "stop_reason": stop})
        if block["type"] == "text":
            start, delta = {**block, "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        h.events([
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    # --- OpenAI Responses -----------------------------------------------------

    def openai(self, h, headers, body):
        named = {}  # declared name -> (namespace or None, the tool's own name)
        for t in body.get("tools") or []:
            # a function tool, or a namespace of them (the MCP server's tools in Codex)
            for s in t.get("tools") or []:
                named[f"{t.get('name')}__{s.get('name')}"] = (t.get("name"), s.get("name"))
            if not t.get("tools"):
                named[t.get("name", "")] = (None, t.get("name", ""))
        names = list(named)
        items = body.get("input") if isinstance(body.get("input"), list) else []
        results = [text_of(i.get("output", "")) for i in items if i.get("type") == "function_call_output"]
        answer = self.next_call(names, results, headers, body)
        rid = f"resp_{len(self.requests)}"
        if answer is None or answer[0] == "text":
            item = {"type": "message", "role": "assistant", "id": f"msg_{rid}", "status": "completed",
                    "content": [{"type": "output_text", "text": SIDE_TEXT if answer is None else answer[1],
                                 "annotations": []}]}
        else:
            _, step, name, args = answer
            item = {"type": "function_call", "id": f"fc_step{step}", "call_id": f"call_step{step}",
                    "status": "completed", "arguments": json.dumps(args)}
            namespace, item["name"] = named[name]
            if namespace is not None:
                item["namespace"] = namespace
        usage = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2}
        h.events([
            ("response.created", {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": rid, "status": "completed", "output": [item], "usage": usage}}),
        ])

    # --- Gemini -----------------------------------------------------------------

    def gemini(self, h, headers, body, stream, sse):
        names = [d.get("name", "") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
        results = [text_of(p["functionResponse"].get("response", {}))
                   for c in body.get("contents", []) for p in c.get("parts") or [] if "functionResponse" in p]
        answer = self.next_call(names, results, headers, body)
        if answer is None or answer[0] == "text":
            part = {"text": SIDE_TEXT if answer is None else answer[1]}
        else:
            _, step, name, args = answer
            part = {"functionCall": {"name": name, "args": args, "id": f"call_step{step}"}}
        chunk = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
                 "modelVersion": "stand-in"}
        if stream and sse:
            h.events([(None, chunk)])
        else:
            h.reply(200, [chunk] if stream else chunk)
