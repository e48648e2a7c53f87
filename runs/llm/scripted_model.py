#!/usr/bin/env python3
# runs/llm/scripted_model.py — a stand-in for a language model when none can be
# reached: a tiny OpenAI-compatible chat-completions server (standard library only,
# 127.0.0.1) that answers the N-th request with the N-th file of a folder (sorted by
# name: turn1.md, turn2.md, ...), as the assistant message, with plausible usage
# token counts. When the files are used up it answers 404 and stops serving.
#
# It exists to record a replayable `tessera optimize --proposer llm` session from
# answers written by hand (runs/llm/rmsnorm/ holds the ones recorded in
# runs/llm/rmsnorm-replay.json; runs/llm/README.md says how). It does not read the
# prompt: answer N is sent whatever was asked.
#
# Usage:
#   python3 runs/llm/scripted_model.py PORT runs/llm/rmsnorm &
#   tessera optimize rmsnorm --proposer llm --llm-base-url http://127.0.0.1:PORT/v1 \
#       --llm-model scripted-expert --llm-max-calls 3 --llm-record runs/llm/rmsnorm-replay.json
# --dump DIR (after the folder) keeps each request body as DIR/request-N.json, to
# read what tessera asked.
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def estimate_tokens(text):
    # About 4 characters a token for English and code: good enough for usage figures.
    return max(1, (len(text) + 3) // 4)


class State:
    def __init__(self, folder, dump):
        self.answers = [os.path.join(folder, f) for f in sorted(os.listdir(folder))
                        if f.endswith(".md") and not f.startswith(".")]
        self.next = 0
        self.dump = dump
        self.lock = threading.Lock()


def make_handler(state, server_ref):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            sys.stderr.write("scripted_model: " + (fmt % args) + "\n")

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self.reply(404, {"error": {"message": "only /v1/chat/completions is served"}})
                return
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                request = json.loads(raw or b"{}")
            except ValueError:
                self.reply(400, {"error": {"message": "the body is not JSON"}})
                return
            with state.lock:
                n = state.next
                state.next += 1
            if state.dump:
                os.makedirs(state.dump, exist_ok=True)
                with open(os.path.join(state.dump, "request-%d.json" % (n + 1)), "wb") as f:
                    f.write(raw)
            if n >= len(state.answers):
                self.reply(404, {"error": {"message": "no scripted answer left (%d served)" % len(state.answers)}})
                # Out of answers: stop serving once this reply is out.
                threading.Thread(target=server_ref[0].shutdown, daemon=True).start()
                return
            with open(state.answers[n], encoding="utf-8") as f:
                text = f.read()
            prompt = "".join(str(m.get("content", "")) for m in request.get("messages", []))
            time.sleep(0.2)  # a model is never instant; keeps latency_s non-zero
            usage = {"prompt_tokens": estimate_tokens(prompt), "completion_tokens": estimate_tokens(text)}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            self.reply(200, {
                "id": "chatcmpl-scripted-%d" % (n + 1),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.get("model", "scripted-expert"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": usage,
            })

    return Handler


def main():
    args = sys.argv[1:]
    dump = None
    if "--dump" in args:
        i = args.index("--dump")
        dump = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.stderr.write("usage: scripted_model.py PORT ANSWERS_DIR [--dump DIR]\n")
        return 2
    port, folder = int(args[0]), args[1]
    state = State(folder, dump)
    if not state.answers:
        sys.stderr.write("scripted_model: no .md answers in %s\n" % folder)
        return 2
    server_ref = [None]
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(state, server_ref))
    server_ref[0] = server
    sys.stderr.write("scripted_model: serving %d answers from %s on http://127.0.0.1:%d/v1\n"
                     % (len(state.answers), folder, port))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
