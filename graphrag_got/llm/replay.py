"""The replay provider: a chat model that answers from recorded responses.

Saved output of any model (``graphrag-got extract --export-replay FILE``) can be validated again,
and tests run, without that model: :class:`ReplayChatModel` answers each call with the next answer
recorded for its key (a chunk hash or chunk id).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr

from graphrag_got.errors import LLMError


class ReplayChatModel(BaseChatModel):
    """Answers from recorded responses, so saved output of any model can be validated without it.

    ``responses`` maps a key (a chunk hash or chunk id, passed as the ``replay_key`` call argument)
    to the successive raw answers recorded for it; ``fallback`` answers calls without a key, in order.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: dict[str, list[str]] = {}
    fallback: list[str] = []
    source: str = "<memory>"
    _used: dict[str, int] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "replay"

    @classmethod
    def from_file(cls, path: str | Path) -> "ReplayChatModel":
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LLMError(f"{p}: replay file not found (set GRAPHRAG_REPLAY_FILE or --replay-file)") from None
        except json.JSONDecodeError as exc:
            raise LLMError(f"{p}:{exc.lineno}:{exc.colno}: replay file is not valid JSON: {exc.msg}") from None
        except IsADirectoryError:
            raise LLMError(f"{p}: is a folder; pass the replay file itself (--replay-file FILE)") from None
        except UnicodeDecodeError as exc:
            raise LLMError(f"{p}: replay file is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except RecursionError:
            raise LLMError(f"{p}: replay file is nested too deeply to be a replay file") from None
        except OSError as exc:
            raise LLMError(f"{p}: cannot read the replay file ({exc.strerror})") from None
        if not isinstance(data, dict) or not isinstance(data.get("responses"), list):
            raise LLMError(f"{p}: a replay file is an object with a 'responses' list "
                           "(write one with `graphrag-got extract --export-replay FILE`)")
        responses: dict[str, list[str]] = {}
        for i, rec in enumerate(data["responses"]):
            if not isinstance(rec, dict) or not isinstance(rec.get("responses"), list):
                raise LLMError(f"{p}: $.responses[{i}] must be an object with a 'responses' list of strings")
            for key in (rec.get("chunk_hash"), rec.get("chunk_id")):
                if key:
                    responses[str(key)] = [str(r) for r in rec["responses"]]
        return cls(responses=responses, fallback=[str(x) for x in data.get("fallback", [])], source=str(p))

    def _next(self, key: str | None) -> str:
        with self._lock:
            slot = key if key is not None else "\0fallback"
            n = self._used.get(slot, 0)
            self._used[slot] = n + 1
        seq = self.responses.get(key, []) if key is not None else self.fallback
        if n < len(seq):
            return seq[n]
        if key is not None and key not in self.responses:
            raise LLMError(f"replay file {self.source} has no recorded response for chunk {key}")
        if key is not None:  # recorded, but fewer answers than calls: repeat the last one
            return seq[-1]
        raise LLMError(f"replay file {self.source} has no more fallback responses")

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        text = self._next(kwargs.get("replay_key"))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
