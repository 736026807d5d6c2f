"""The exact IGD backend: a local causal LM through transformers, full logits, all branches in one batch.

Prompts of similar length are prefilled together (left-padded, masked); a much longer one (the user branch's full
context) alone, so no work goes into padding. The rows' caches are then stitched, left-padded, into one batch that
shares one forward pass per step, each row with its own slice of the KV cache. `fork` shares the cached tensors (a
forward never writes into them in place; it makes new ones), so previews, filter scoring and the corrected decoding
never process a prompt twice nor copy its cache. Rows that finish leave the batch: the forwards after that are
smaller.
"""
from __future__ import annotations

import copy
from typing import Sequence

import numpy as np

from agents.igd.local_model import LocalModel
from agents.igd.prompts import completion_prompt

PADDING_SHARE = 0.25  # a prompt joins a prefill group if the group's padding stays within this share of its tokens


def prefill_groups(lengths: Sequence[int], *, window: int | None = None) -> list[list[int]]:
    """Row indices grouped for batched prefill: by length, a group grows while its left padding stays within
    PADDING_SHARE of its real tokens (the memory variants go together; the long user prompt alone). Prompts at
    least a sliding window long are prefilled alone."""
    groups: list[list[int]] = []
    for row in sorted(range(len(lengths)), key=lambda r: lengths[r]):
        group = groups[-1] if groups else None
        if group is not None and (window is None or lengths[row] < window):
            candidate = group + [row]
            tokens = sum(lengths[r] for r in candidate)
            if lengths[row] * len(candidate) - tokens <= PADDING_SHARE * tokens:
                group.append(row)
                continue
        groups.append([row])
    return groups


class DenseDistribution:
    """Exact log-probabilities over the whole vocabulary."""

    def __init__(self, logprobs: np.ndarray) -> None:
        self._logprobs = logprobs
        self._top: tuple[list[int], np.ndarray] | None = None  # the largest top-k asked so far (each branch asks again)

    def top(self, k: int) -> tuple[list[int], np.ndarray]:
        k = min(k, self._logprobs.size)
        if k == 1 and self._top is None:  # greedy steps: one pass over the vocabulary
            best = int(np.argmax(self._logprobs))
            return [best], self._logprobs[[best]]
        if self._top is None or len(self._top[0]) < k:
            part = np.argpartition(-self._logprobs, k - 1)[:k]
            order = part[np.argsort(-self._logprobs[part], kind="stable")]
            self._top = ([int(i) for i in order], self._logprobs[order])
        ids, values = self._top
        return ids[:k], values[:k]

    def logprobs(self, tokens: Sequence[int]) -> np.ndarray:
        return self._logprobs[np.asarray(tokens, dtype=np.int64)]


def share_cache(cache):
    """A cache object of its own over the same tensors: what a deep copy would give, without copying. Safe because
    cache layers only ever replace their tensors (torch.cat, slicing, index_select), never write into them."""
    twin = copy.copy(cache)
    twin.layers = [copy.copy(layer) for layer in cache.layers]
    return twin


class LocalDecoder:
    """Rows are logical (the caller's order); only unfinished rows stay in the batch (`_live`: logical row per batch
    row)."""

    def __init__(self, *, backend: "LocalBackend", cache, attention_mask, last_logprobs: np.ndarray) -> None:
        self._backend = backend
        self._cache = cache
        self._mask = attention_mask
        self._last = last_logprobs  # [live rows, vocab] for the next token
        self._rows = last_logprobs.shape[0]
        self._live = list(range(self._rows))

    def distributions(self) -> list[DenseDistribution | None]:
        batch_row = {row: index for index, row in enumerate(self._live)}
        return [DenseDistribution(self._last[batch_row[row]]) if row in batch_row else None for row in range(self._rows)]

    def advance(self, tokens: Sequence[int | None]) -> None:
        import torch

        keep = [index for index, row in enumerate(self._live) if tokens[row] is not None]
        if not keep:
            self._live = []
            return
        if len(keep) < len(self._live):
            index = torch.tensor(keep, dtype=torch.long)
            self._cache = share_cache(self._cache)
            self._cache.reorder_cache(index)
            self._mask = self._mask[index]
            self._live = [self._live[i] for i in keep]
        ids = torch.tensor([[int(tokens[row])] for row in self._live], dtype=torch.long)
        self._mask = torch.cat([self._mask, torch.ones((len(self._live), 1), dtype=self._mask.dtype)], dim=1)
        positions = (self._mask.sum(dim=1, keepdim=True) - 1).clamp(min=0)
        self._last = self._backend.forward(ids, self._mask, positions, self._cache)[:, -1, :]

    def fork(self) -> "LocalDecoder":
        twin = LocalDecoder(
            backend=self._backend, cache=share_cache(self._cache), attention_mask=self._mask, last_logprobs=self._last,
        )
        twin._rows, twin._live = self._rows, list(self._live)
        return twin

    def extend(self, tokens: Sequence[int]) -> None:
        """Append the same tokens to every row in one forward (a correction leaving the drafts catches up)."""
        import torch

        if not tokens:
            return
        live, width = len(self._live), len(tokens)
        start = self._mask.sum(dim=1, keepdim=True)
        self._mask = torch.cat([self._mask, torch.ones((live, width), dtype=self._mask.dtype)], dim=1)
        ids = torch.tensor([list(tokens)] * live, dtype=torch.long)
        positions = start + torch.arange(width).unsqueeze(0)
        self._last = self._backend.forward(ids, self._mask, positions, self._cache)[:, -1, :]

    def teacher_forced(self, requests: Sequence[tuple[int, Sequence[int]]]) -> list[list[DenseDistribution]]:
        """For each (row, continuation): the row's next-token distributions before each token and after the last
        (len + 1 of them). All continuations in one forward, right-padded (padding after a continuation cannot change
        its own, causal, positions), on the cache's rows gathered to one row per request."""
        import torch

        batch_row = {row: index for index, row in enumerate(self._live)}
        out = [[DenseDistribution(self._last[batch_row[row]])] for row, _ in requests]
        todo = [index for index, (_, tokens) in enumerate(requests) if tokens]
        if not todo:
            return out
        rows = torch.tensor([batch_row[requests[i][0]] for i in todo], dtype=torch.long)
        cache = share_cache(self._cache)
        cache.reorder_cache(rows)
        width = max(len(requests[i][1]) for i in todo)
        pad = self._backend.pad_id
        ids = torch.tensor([list(requests[i][1]) + [pad] * (width - len(requests[i][1])) for i in todo], dtype=torch.long)
        mask = torch.cat([self._mask[rows], torch.ones((len(todo), width), dtype=self._mask.dtype)], dim=1)
        positions = self._mask[rows].sum(dim=1, keepdim=True) + torch.arange(width).unsqueeze(0)
        logprobs = self._backend.forward(ids, mask, positions, cache, every_position=True)
        for j, index in enumerate(todo):
            out[index].extend(DenseDistribution(logprobs[j, position]) for position in range(len(requests[index][1])))
        return out

    def sequence_logprobs(self, requests: Sequence[tuple[int, Sequence[int]]]) -> list[float]:
        """All continuations in one batched forward on the cache's rows gathered to one row per request."""
        import torch

        batch_row = {row: index for index, row in enumerate(self._live)}
        scores = [float(self._last[batch_row[row], tokens[0]]) if tokens else 0.0 for row, tokens in requests]
        longest = max((len(tokens) for _, tokens in requests), default=0)
        if longest <= 1:
            return scores
        rows = torch.tensor([batch_row[row] for row, _ in requests], dtype=torch.long)
        cache = share_cache(self._cache)
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
        window = getattr(self.model.config, "sliding_window", None)
        self._window = int(window) if window else None

    def forward(self, ids, mask, positions, cache, *, every_position: bool = False) -> np.ndarray:
        """Log-probabilities [rows, positions, vocab]: of the last position only unless asked (the output layer over
        a 262k vocabulary costs as much as the rest of a small model)."""
        import torch

        with torch.inference_mode():
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True,
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
        """Prompts are prefilled in groups of similar length (one left-padded forward per group), then the groups'
        caches are stitched, left-padded, into one batch for the decoding steps, rows in the prompts' order."""
        import torch

        # A chat template writes its own <bos>; a plain prompt needs the tokenizer's (Gemma degrades without it).
        special = not self._chat
        rows = [self.tokenizer(self._render(p), add_special_tokens=special)["input_ids"] for p in prompts]
        lengths = [len(ids) for ids in rows]
        caches, last, order = [], [], []
        for group in prefill_groups(lengths, window=self._window):
            width = max(lengths[row] for row in group)
            ids = torch.tensor([[self.pad_id] * (width - lengths[row]) + rows[row] for row in group], dtype=torch.long)
            mask = torch.tensor([[0] * (width - lengths[row]) + [1] * lengths[row] for row in group], dtype=torch.long)
            positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
            cache = self._new_cache()
            logprobs = self.forward(ids, mask, positions, cache)
            caches.append(cache)
            last.extend(logprobs[:, -1])
            order.extend(group)
        longest = max(lengths)
        mask = torch.zeros((len(rows), longest), dtype=torch.long)
        for row, length in enumerate(lengths):
            mask[row, longest - length :] = 1
        cache = self._stitch(caches, longest)
        position = {row: index for index, row in enumerate(order)}
        in_order = [position[row] for row in range(len(rows))]
        if in_order != list(range(len(rows))):
            cache.reorder_cache(torch.tensor(in_order, dtype=torch.long))
        return LocalDecoder(
            backend=self, cache=cache, attention_mask=mask, last_logprobs=np.stack([last[i] for i in in_order])
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
