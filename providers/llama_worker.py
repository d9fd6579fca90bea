"""The embedded model's worker process: llama.cpp runs here, never in the fairsweep process.

    python -m fairsweep.providers.llama_worker MODEL_PATH N_THREADS N_CTX [--probe]

Protocol: one JSON object per line on the original stdout; requests {"messages", "params"} in,
replies {"ok": completion dict} or {"error": message, "class": error class} out, one reply per
request, in order. Native code that prints goes to stderr, never into the protocol. `--probe` loads
the model, generates one token and exits 0: the native-code check (see native_check.py).

Imports nothing from fairsweep beyond this file, so a worker starts in the time llama_cpp takes.
"""

from __future__ import annotations

import json
import os
import sys

# Generation parameters llama-cpp-python's create_chat_completion accepts from a request's params.
PASSED_PARAMS = ("max_tokens", "temperature", "top_p", "seed", "stop", "response_format")


def load(model_path: str, n_threads: int, n_ctx: int):
    from llama_cpp import Llama

    return Llama(model_path=model_path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                 verbose=False)


def complete(llama, request: dict) -> dict:
    params = request.get("params") or {}
    kwargs = {"max_tokens": 64, "temperature": 0.0, **{k: params[k] for k in PASSED_PARAMS if k in params}}
    try:
        out = llama.create_chat_completion(messages=request["messages"], **kwargs)
    except ValueError as exc:  # llama.cpp raises ValueError when the prompt exceeds the context
        return {"error": str(exc)[:300], "class": "context_length"}
    choice = out["choices"][0]
    usage = out.get("usage") or {}
    return {"ok": {"text": choice["message"].get("content") or "", "finish_reason": choice.get("finish_reason"),
                   "prompt_tokens": usage.get("prompt_tokens"),
                   "completion_tokens": usage.get("completion_tokens")}}


def serve(llama, requests, replies) -> None:
    for line in requests:
        reply = complete(llama, json.loads(line))
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main(argv: list[str]) -> int:
    model_path, n_threads, n_ctx = argv[0], int(argv[1]), int(argv[2])
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever native code prints lands on stderr, not in the protocol
    try:
        llama = load(model_path, n_threads, n_ctx)
    except Exception as exc:  # noqa: BLE001 - any load failure is reported to the parent, then exit 3
        replies.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300], "class": "load_failed"}) + "\n")
        replies.flush()
        return 3
    if "--probe" in argv:
        llama.create_completion("Hello", max_tokens=1, temperature=0.0)
        return 0
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    serve(llama, sys.stdin, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
