"""The exact IGD backend: a local causal LM through transformers, full logits, all branches in one batch.

Each prompt is processed once, alone; the rows' caches are then stitched, left-padded, into one batch that shares
one forward pass per step, each row with its own slice of the KV cache. `fork` copies the cache after the prompts are
processed, so previews, filter scoring and the corrected decoding never process a prompt twice.
"""
from __future__ import annotations

import copy
from typing import Sequence

import numpy as np

from agents.igd.local_model import LocalModel
from agents.igd.prompts import completion_prompt


class DenseDistribution:
    """Exact log-probabilities over the whole vocabulary."""

    def __init__(self, logprobs: np.ndarray) -> None:
        self._logprobs = logprobs

    def top(self, k: int) -> tuple[list[int], np.ndarray]:
        k = min(k, self._logprobs.size)
        part = np.argpartition(-self._logprobs, k - 1)[:k]
        order = part[np.argsort(-self._logprobs[part])]
        return [int(i) for i in order], self._logprobs[order]

    def logprobs(self, tokens: Sequence[int]) -> np.ndarray:
        return self._logprobs[np.asarray(tokens, dtype=np.int64)]


class LocalDecoder:
    def __init__(self, *, backend: "LocalBackend", cache, attention_mask, last_logprobs: np.ndarray) -> None:
        self._backend = backend
        self._cache = cache
        self._mask = attention_mask
        self._last = last_logprobs  # [rows, vocab] for the next token
        self._finished = [False] * last_logprobs.shape[0]

    def distributions(self) -> list[DenseDistribution | None]:
        return [None if done else DenseDistribution(row) for row, done in zip(self._last, self._finished)]

    def advance(self, tokens: Sequence[int | None]) -> None:
        import torch

        pad = self._backend.pad_id
        ids = torch.tensor([[pad if t is None else int(t)] for t in tokens], dtype=torch.long)
        for row, token in enumerate(tokens):
            if token is None:
                self._finished[row] = True
        self._mask = torch.cat([self._mask, torch.ones((len(tokens), 1), dtype=self._mask.dtype)], dim=1)
        positions = (self._mask.sum(dim=1, keepdim=True) - 1).clamp(min=0)
        self._last = self._backend.forward(ids, self._mask, positions, self._cache)[:, -1, :]

    def fork(self) -> "LocalDecoder":
        twin = LocalDecoder(
            backend=self._backend, cache=copy.deepcopy(self._cache), attention_mask=self._mask.clone(),
            last_logprobs=self._last,
        )
        twin._finished = list(self._finished)
        return twin

    def sequence_logprobs(self, requests: Sequence[tuple[int, Sequence[int]]]) -> list[float]:
        """All continuations in one batched forward on a copy of the cache reordered to one row per request."""
        import torch

        scores = [float(self._last[row, tokens[0]]) if tokens else 0.0 for row, tokens in requests]
        longest = max((len(tokens) for _, tokens in requests), default=0)
        if longest <= 1:
            return scores
        rows = torch.tensor([row for row, _ in requests], dtype=torch.long)
        cache = copy.deepcopy(self._cache)
        cache.reorder_cache(rows)
        pad = self._backend.pad_id
        # Feed tokens[:-1]; right padding after a continuation cannot change its own (causal) positions.
        width = longest - 1
        ids = torch.tensor([list(tokens[:-1]) + [pad] * (width - len(tokens[:-1])) for _, tokens in requests])
        mask = torch.cat([self._mask[rows], torch.ones((len(requests), width), dtype=self._mask.dtype)], dim=1)
        start = self._mask[rows].sum(dim=1, keepdim=True)
        positions = start + torch.arange(width).unsqueeze(0)
        logprobs = self._backend.forward(ids, mask, positions, cache, every_position=True)
        for index, (_, tokens) in enumerate(requests):
            for position in range(1, len(tokens)):
                scores[index] += float(logprobs[index, position - 1, tokens[position]])
        return scores


class LocalBackend:
    """`open` tokenizes with the model's chat template when it has one."""

    def __init__(self, local: LocalModel) -> None:
        self.model = local.model
        self.tokenizer = local.tokenizer
        self.name = f"local:{local.name}"
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        stops = {self.tokenizer.eos_token_id}
        for special in ("<end_of_turn>", "<eos>", "<|im_end|>", "<|eot_id|>"):
            token_id = self.tokenizer.convert_tokens_to_ids(special)
            if isinstance(token_id, int) and token_id != self.tokenizer.unk_token_id:
                stops.add(token_id)
        self._stops = {s for s in stops if s is not None}
        self._newline_tokens: dict[int, bool] = {}
        self._chat = bool(getattr(self.tokenizer, "chat_template", None))

    def forward(self, ids, mask, positions, cache, *, every_position: bool = False) -> np.ndarray:
        """Log-probabilities [rows, positions, vocab]: of the last position only unless asked (the output layer over
        a 262k vocabulary costs as much as the rest of a small model)."""
        import torch

        with torch.inference_mode():
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True,
                logits_to_keep=0 if every_position else 1,
            )
            return torch.log_softmax(out.logits.float(), dim=-1).numpy()

    def _render(self, prompt: str) -> str:
        if self._chat:
            return self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
            )
        return completion_prompt(prompt)

    def open(self, prompts: Sequence[str]) -> LocalDecoder:
        """Each prompt is processed alone (no work spent on padding: the user prompt is several times longer than
        the memory prompts), then the caches are stitched, left-padded, into one batch for the decoding steps."""
        import torch

        # A chat template writes its own <bos>; a plain prompt needs the tokenizer's (Gemma degrades without it).
        special = not self._chat
        rows = [
            self.tokenizer(self._render(p), return_tensors="pt", add_special_tokens=special)["input_ids"] for p in prompts
        ]
        caches, last = [], []
        for ids in rows:
            cache = self._new_cache()
            length = ids.shape[1]
            logprobs = self.forward(ids, torch.ones((1, length), dtype=torch.long), torch.arange(length)[None, :], cache)
            caches.append(cache)
            last.append(logprobs[0, -1])
        lengths = [ids.shape[1] for ids in rows]
        longest = max(lengths)
        mask = torch.zeros((len(rows), longest), dtype=torch.long)
        for row, length in enumerate(lengths):
            mask[row, longest - length :] = 1
        return LocalDecoder(
            backend=self, cache=self._stitch(caches, longest), attention_mask=mask, last_logprobs=np.stack(last)
        )

    def _new_cache(self):
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def _stitch(self, caches: list, longest: int):
        """One batch cache equal to what a left-padded batched prefill of `longest` positions would hold: each layer's
        keys/values left-padded with zeros (masked out) to the longest row's stored length (sliding-window layers store
        at most their window)."""
        import torch

        merged = self._new_cache()
        for index, layer in enumerate(merged.layers):
            parts = [cache.layers[index] for cache in caches]
            width = max(part.keys.shape[-2] for part in parts)

            def padded(tensor):
                missing = width - tensor.shape[-2]
                if missing == 0:
                    return tensor
                pad = torch.zeros((*tensor.shape[:-2], missing, tensor.shape[-1]), dtype=tensor.dtype)
                return torch.cat([pad, tensor], dim=-2)

            keys = torch.cat([padded(part.keys) for part in parts], dim=0)
            values = torch.cat([padded(part.values) for part in parts], dim=0)
            layer.lazy_initialization(keys, values)
            layer.keys, layer.values = keys, values
            if hasattr(layer, "cumulative_length"):
                layer.cumulative_length = longest
        return merged

    def is_end(self, token: int) -> bool:
        return token in self._stops

    def is_line_break(self, token: int) -> bool:
        if token not in self._newline_tokens:
            self._newline_tokens[token] = "\n" in self.tokenizer.decode([token])
        return self._newline_tokens[token]

    def text(self, tokens: Sequence[int]) -> str:
        return self.tokenizer.decode(list(tokens), skip_special_tokens=True)
