"""The simulated server's batch APIs on a fast clock: OpenAI Files + Batches (/v1/files, /v1/batches) and
Anthropic Message Batches (/v1/messages/batches), sharing the server's answers, model list, context limit
and statistics.

A batch's requests finish one after another over `--batch-duration-s` seconds (request i of n at
created + duration * (i + 1) / n); `--batch-error P` makes a request error with a server error (worth
sending again); `--batch-expire-first N` makes the first N batches expire halfway through, so only their
first half is answered; a cancel ends the batch 0.1 s later with what was answered by then.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from aiohttp import web

from .anthropic import Rejected, check_auth, check_params, message_payload
from .chat import RequestRejected, check_request, completion_payload, cut_to_max_tokens
from .state import DEFAULT_MODEL, error_body, estimate_tokens, messages_text, prompt_fingerprint

CANCEL_DELAY_S = 0.1


@dataclass
class SimBatch:
    """One batch of either API and its clock."""

    id: str
    api: str                    # openai | anthropic
    requests: list[tuple[str, dict]]  # (custom_id, request body)
    created: float
    duration: float
    expires: bool
    metadata: dict = field(default_factory=dict)
    input_file_id: str | None = None
    cancel_at: float | None = None
    results: dict[str, dict] | None = None  # custom_id -> result, filled when the batch ends
    output_file_id: str | None = None
    error_file_id: str | None = None

    def end_time(self) -> float:
        if self.cancel_at is not None:
            return min(self.cancel_at + CANCEL_DELAY_S, self._natural_end())
        return self._natural_end()

    def _natural_end(self) -> float:
        return self.created + (self.duration / 2 if self.expires else self.duration)

    def state(self, now: float) -> str:
        """in_progress, cancelling, completed, expired or cancelled."""
        if now < self.end_time():
            return "cancelling" if self.cancel_at is not None else "in_progress"
        if self.cancel_at is not None and self.cancel_at + CANCEL_DELAY_S <= self._natural_end():
            return "cancelled"
        return "expired" if self.expires else "completed"

    def answered(self, now: float) -> int:
        """How many requests finished by `now` (they finish in order)."""
        cutoff = min(now, self.end_time())
        n = len(self.requests)
        return sum(1 for i in range(n) if self.created + self.duration * (i + 1) / n <= cutoff + 1e-9)


class BatchSim:
    """Batches, files and the per-request answering of both APIs."""

    def __init__(self, state):
        self.state = state
        cfg = state.config
        self.duration = cfg.batch_duration_s
        self.expire_left = cfg.batch_expire_first
        self.error_rng = random.Random(f"batch:{cfg.fault_seed}")
        self.batches: dict[str, SimBatch] = {}
        self.files: dict[str, bytes] = {}
        self.reset_stats()

    def reset_stats(self) -> None:
        self.stats = {"created": 0, "expired": 0, "cancelled": 0, "errored": 0, "custom_ids": {}}

    def create(self, api: str, requests: list[tuple[str, dict]], **extra) -> SimBatch:
        prefix = "batch_" if api == "openai" else "msgbatch_"
        expires = self.expire_left > 0
        self.expire_left -= int(expires)
        batch = SimBatch(prefix + uuid.uuid4().hex[:24], api, requests, time.time(), self.duration, expires, **extra)
        self.batches[batch.id] = batch
        self.stats["created"] += 1
        for custom_id, _ in requests:
            self.stats["custom_ids"][custom_id] = self.stats["custom_ids"].get(custom_id, 0) + 1
        return batch

    def finish(self, batch: SimBatch) -> dict[str, dict]:
        """Answer the batch's requests once, when it has ended: {custom_id: result}."""
        if batch.results is None:
            state = batch.state(time.time())
            done = batch.answered(batch.end_time())
            batch.results = {}
            for i, (custom_id, body) in enumerate(batch.requests):
                batch.results[custom_id] = (self._answer(batch.api, body) if i < done
                                            else {"unfinished": "expired" if state == "expired" else "canceled"})
            if state in ("expired", "cancelled"):
                self.stats[state] += 1
        return batch.results

    def _answer(self, api: str, body: dict) -> dict:
        """{'ok': payload} or {'status': int, 'error': body} for one request, as the synchronous route would."""
        state = self.state
        state.counter += 1
        messages = body.get("messages") if api == "openai" else None
        try:
            if api == "openai":
                if not isinstance(messages, list) or not messages:
                    raise RequestRejected(400, "'messages' must be a non-empty list.", "invalid_request_error", None)
                model = body.get("model") or DEFAULT_MODEL
                prompt_tokens = estimate_tokens(messages_text(messages))
                max_tokens = check_request(state, body, model, prompt_tokens)
            else:
                messages, model, prompt_tokens, max_tokens = check_params(state, body)
        except RequestRejected as reject:
            return {"status": reject.status, "error": error_body(str(reject), reject.type, reject.code)}
        except Rejected as rejected:
            return {"status": rejected.status, "error": rejected.body()}
        counts = state.per_prompt.setdefault(prompt_fingerprint(messages), [0, 0, None])
        counts[0] += 1
        if self.error_rng.random() < state.config.batch_error:
            self.stats["errored"] += 1
            if api == "openai":
                return {"status": 500, "error": error_body("The server had an error.", "server_error", None)}
            return {"status": 500, "error": Rejected(500, "api_error", "Internal server error").body()}
        counts[1] += 1
        counts[2] = time.time()
        state.ok += 1
        if api == "anthropic":
            return {"ok": message_payload(state, body, messages, model, prompt_tokens, max_tokens)}
        text, finish = cut_to_max_tokens(state.choose_answer(body, messages, prompt_fingerprint(messages)), max_tokens)
        return {"ok": completion_payload(state, model, text, finish, prompt_tokens)}


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


# --------------------------------------------------------------------------- OpenAI Files + Batches

def _openai_auth(sim: BatchSim, request: web.Request) -> web.Response | None:
    key = sim.state.config.api_key
    if key and request.headers.get("Authorization") != f"Bearer {key}":
        return web.json_response(error_body("Incorrect API key provided.", "invalid_request_error",
                                             "invalid_api_key"), status=401)
    return None


def _openai_object(sim: BatchSim, batch: SimBatch) -> dict:
    now = time.time()
    state = batch.state(now)
    status = {"cancelling": "cancelling", "in_progress": "in_progress"}.get(state, state)
    done = batch.answered(now)
    if state in ("completed", "expired", "cancelled"):
        _openai_files(sim, batch)
    failed = sum(1 for r in (batch.results or {}).values() if "status" in r)
    return {"id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
            "input_file_id": batch.input_file_id, "completion_window": "24h", "status": status,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "created_at": int(batch.created), "in_progress_at": int(batch.created),
            "expires_at": int(batch.created + 86400), "completed_at": int(now) if status == "completed" else None,
            "expired_at": int(now) if status == "expired" else None,
            "cancelled_at": int(now) if status == "cancelled" else None,
            "request_counts": {"total": len(batch.requests), "completed": done - failed, "failed": failed},
            "metadata": batch.metadata}


def _openai_files(sim: BatchSim, batch: SimBatch) -> None:
    """Write the output and error files of an ended batch (once)."""
    if batch.output_file_id is not None or batch.error_file_id is not None:
        return
    out, err = [], []
    for custom_id, result in sim.finish(batch).items():
        line = {"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": custom_id}
        if "ok" in result:
            out.append({**line, "response": {"status_code": 200, "request_id": uuid.uuid4().hex, "body": result["ok"]},
                        "error": None})
        elif "status" in result:
            err.append({**line, "response": {"status_code": result["status"], "request_id": uuid.uuid4().hex,
                                             "body": result["error"]}, "error": None})
        elif result["unfinished"] == "expired":  # cancelled requests appear in neither file
            err.append({**line, "response": None,
                        "error": {"code": "batch_expired", "message": "This request could not be executed before "
                                                                      "the completion window expired."}})
    for lines, attr in ((out, "output_file_id"), (err, "error_file_id")):
        if lines:
            file_id = f"file-{uuid.uuid4().hex[:24]}"
            sim.files[file_id] = "".join(json.dumps(x) + "\n" for x in lines).encode()
            setattr(batch, attr, file_id)


def add_openai_routes(app: web.Application, sim: BatchSim) -> None:
    async def upload(request: web.Request) -> web.Response:
        if (denied := _openai_auth(sim, request)) is not None:
            return denied
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or upload is None or not hasattr(upload, "file"):
            return web.json_response(error_body("purpose 'batch' and a file are required", "invalid_request_error",
                                                 None), status=400)
        data = upload.file.read()
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        sim.files[file_id] = data
        return web.json_response({"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                  "filename": upload.filename, "purpose": "batch"})

    async def content(request: web.Request) -> web.Response:
        if (denied := _openai_auth(sim, request)) is not None:
            return denied
        data = sim.files.get(request.match_info["file_id"])
        if data is None:
            return web.json_response(error_body("No such file", "invalid_request_error", None), status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def create(request: web.Request) -> web.Response:
        if (denied := _openai_auth(sim, request)) is not None:
            return denied
        body = await request.json()
        data = sim.files.get(body.get("input_file_id", ""))
        if data is None or body.get("endpoint") != "/v1/chat/completions":
            return web.json_response(error_body("input_file_id and endpoint /v1/chat/completions are required",
                                                 "invalid_request_error", None), status=400)
        try:
            lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
            requests = [(x["custom_id"], x["body"]) for x in lines if x.get("url") == "/v1/chat/completions"]
        except (ValueError, KeyError, TypeError):
            requests, lines = [], [None]
        if len(requests) != len(lines) or len({c for c, _ in requests}) != len(requests) or not requests:
            return web.json_response(error_body("the input file is not a valid batch file", "invalid_request_error",
                                                 None), status=400)
        batch = sim.create("openai", requests, metadata=body.get("metadata") or {},
                           input_file_id=body["input_file_id"])
        return web.json_response(_openai_object(sim, batch))

    async def retrieve(request: web.Request) -> web.Response:
        if (denied := _openai_auth(sim, request)) is not None:
            return denied
        batch = sim.batches.get(request.match_info["batch_id"])
        if batch is None or batch.api != "openai":
            return web.json_response(error_body("No such batch", "invalid_request_error", None), status=404)
        if request.path.endswith("/cancel"):
            batch.cancel_at = batch.cancel_at or time.time()
        return web.json_response(_openai_object(sim, batch))

    async def listing(request: web.Request) -> web.Response:
        if (denied := _openai_auth(sim, request)) is not None:
            return denied
        mine = sorted((b for b in sim.batches.values() if b.api == "openai"), key=lambda b: -b.created)
        data = [_openai_object(sim, b) for b in mine[: int(request.query.get("limit", 20))]]
        return web.json_response({"object": "list", "data": data, "has_more": len(mine) > len(data)})

    app.router.add_post("/v1/files", upload)
    app.router.add_get("/v1/files/{file_id}/content", content)
    app.router.add_post("/v1/batches", create)
    app.router.add_get("/v1/batches", listing)
    app.router.add_get("/v1/batches/{batch_id}", retrieve)
    app.router.add_post("/v1/batches/{batch_id}/cancel", retrieve)


# --------------------------------------------------------------------------- Anthropic Message Batches

def _anthropic_object(request: web.Request, batch: SimBatch) -> dict:
    now = time.time()
    state = batch.state(now)
    ended = state in ("completed", "expired", "cancelled")
    counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    if ended:
        for result in (batch.results or {}).values():
            kind = "succeeded" if "ok" in result else "errored" if "status" in result else result["unfinished"]
            counts[kind] += 1
    else:
        counts["processing"] = len(batch.requests)
    root = f"{request.scheme}://{request.host}"
    return {"id": batch.id, "type": "message_batch",
            "processing_status": "ended" if ended else "canceling" if state == "cancelling" else "in_progress",
            "request_counts": counts, "ended_at": _iso(batch.end_time()) if ended else None,
            "created_at": _iso(batch.created), "expires_at": _iso(batch.created + 86400),
            "cancel_initiated_at": _iso(batch.cancel_at), "archived_at": None,
            "results_url": f"{root}/v1/messages/batches/{batch.id}/results" if ended else None}


def add_anthropic_batch_routes(app: web.Application, sim: BatchSim) -> None:
    def guarded(handler):
        async def wrapped(request: web.Request) -> web.Response:
            try:
                check_auth(sim.state, request)
                return await handler(request)
            except Rejected as rejected:
                return rejected.response()
        return wrapped

    def found(request: web.Request) -> SimBatch:
        batch = sim.batches.get(request.match_info["batch_id"])
        if batch is None or batch.api != "anthropic":
            raise Rejected(404, "not_found_error", "batch not found")
        return batch

    async def create(request: web.Request) -> web.Response:
        body = await request.json()
        items = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(items, list) or not items or not all(
                isinstance(x, dict) and isinstance(x.get("custom_id"), str) and isinstance(x.get("params"), dict)
                for x in items) or len({x["custom_id"] for x in items}) != len(items):
            raise Rejected(400, "invalid_request_error", "requests: a list of {custom_id, params} with unique ids")
        batch = sim.create("anthropic", [(x["custom_id"], x["params"]) for x in items])
        return web.json_response(_anthropic_object(request, batch))

    async def retrieve(request: web.Request) -> web.Response:
        batch = found(request)
        if request.path.endswith("/cancel"):
            batch.cancel_at = batch.cancel_at or time.time()
        if batch.state(time.time()) in ("completed", "expired", "cancelled"):
            sim.finish(batch)
        return web.json_response(_anthropic_object(request, batch))

    async def results(request: web.Request) -> web.Response:
        batch = found(request)
        if batch.state(time.time()) not in ("completed", "expired", "cancelled"):
            raise Rejected(400, "invalid_request_error", "batch is still processing")
        lines = []
        for custom_id, result in sim.finish(batch).items():
            if "ok" in result:
                entry: dict[str, Any] = {"type": "succeeded", "message": result["ok"]}
            elif "status" in result:
                entry = {"type": "errored", "error": result["error"]}
            else:
                entry = {"type": result["unfinished"]}
            lines.append(json.dumps({"custom_id": custom_id, "result": entry}) + "\n")
        return web.Response(body="".join(lines).encode(), content_type="application/binary")

    async def listing(request: web.Request) -> web.Response:
        mine = sorted((b for b in sim.batches.values() if b.api == "anthropic"), key=lambda b: -b.created)
        data = [_anthropic_object(request, b) for b in mine[: int(request.query.get("limit", 20))]]
        return web.json_response({"data": data, "has_more": len(mine) > len(data),
                                  "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})

    app.router.add_post("/v1/messages/batches", guarded(create))
    app.router.add_get("/v1/messages/batches", guarded(listing))
    app.router.add_get("/v1/messages/batches/{batch_id}", guarded(retrieve))
    app.router.add_post("/v1/messages/batches/{batch_id}/cancel", guarded(retrieve))
    app.router.add_get("/v1/messages/batches/{batch_id}/results", guarded(results))


def add_batch_routes(app: web.Application, state) -> BatchSim:
    """Both batch APIs on `app`, sharing `state`."""
    sim = state.batch_sim = BatchSim(state)
    add_openai_routes(app, sim)
    add_anthropic_batch_routes(app, sim)
    return sim
