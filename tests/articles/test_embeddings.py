"""The ONNX Runtime encoder against sentence-transformers on PyTorch: same model, same vectors."""
import numpy as np
import pytest

from articles.embeddings import embed_texts, onnx_export_dir

TEXTS = [
    "Dogs travel free on the outer deck.",
    "A single adult ticket to the island costs 18 euro; children under five travel free, and bicycles cost four euro "
    "each way when there is room on the car deck.",
    "Refunds",
    "Sailings may be cancelled in bad weather; check the website before you travel. " * 6,
]


@pytest.mark.parametrize("backend", ["onnx", "onnx-opt"])
def test_onnx_vectors_agree_with_pytorch_and_keep_the_input_order(backend, settings, tmp_path):
    reference = embed_texts(TEXTS, backend="torch")
    vectors = embed_texts(TEXTS, backend=backend)
    assert vectors.shape == reference.shape == (len(TEXTS), settings.EMBEDDING_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= 0.99, cosines  # row i is still text i although batches are sorted by length
    assert (onnx_export_dir() / ("model_opt.onnx" if backend == "onnx-opt" else "model.onnx")).exists()


def test_the_default_backend_is_the_measured_faster_one(settings):
    assert settings.EMBEDDING_BACKEND == "onnx-opt"
    assert embed_texts([]).shape == (0, settings.EMBEDDING_DIM)


def test_each_onnx_run_pads_to_its_own_longest_text_within_the_token_budget(monkeypatch):
    """tokenizer.json pads every text to a fixed length, and a fixed 64 texts per run pads short statements to
    the length of long chunks: both cost encoder CPU for nothing (bench/index.py)."""
    from articles.embeddings import get_encoder
    from articles.embeddings_onnx import TOKENS_PER_BATCH

    encoder = get_encoder("onnx-opt")
    texts = ["Refunds"] * 40 + [TEXTS[3]] * 30 + ["Towels cost two euros at the desk."] * 20
    shapes: list[tuple[int, int]] = []
    real_run = encoder.session.run

    def recording_run(outputs, feed):
        shapes.append(feed["input_ids"].shape)
        return real_run(outputs, feed)

    monkeypatch.setattr(encoder.session, "run", recording_run)
    vectors = encoder.encode(texts)
    longest = {text: len(encoder.tokenizer.encode(text).ids) for text in set(texts)}
    assert all(rows * width <= max(TOKENS_PER_BATCH, width) for rows, width in shapes), shapes
    assert sorted({width for _, width in shapes}) == sorted(longest.values())  # each length runs among its own
    assert sum(rows for rows, _ in shapes) == len(texts)
    np.testing.assert_allclose(vectors, embed_texts(texts, backend="torch"), atol=2e-3)


def test_encoder_runs_cover_every_text_in_order_within_the_limits_and_pad_less_than_a_greedy_cut():
    from articles.embeddings_onnx import encoder_runs

    # An index batch: a few long chunks, then statements of every length down to a heading.
    lengths = sorted([180, 150, 149, 120, 64, 60, 59, 58, 40, 33, 31, 30, 30, 29, 17, 16, 16, 15, 9, 8, 8, 3] * 3,
                     reverse=True)
    runs = encoder_runs(lengths, max_rows=8, max_tokens=256, run_cost=16)
    assert runs[0][0] == 0 and runs[-1][1] == len(lengths)
    assert all(end == next_start for (_, end), (next_start, _) in zip(runs, runs[1:]))
    assert all(0 < end - start <= 8 for start, end in runs)
    assert all(end - start == 1 or (end - start) * lengths[start] <= 256 for start, end in runs)

    def cost(cut):
        return sum((end - start) * lengths[start] + 16 for start, end in cut)

    greedy, start = [], 0  # as many as fit behind the longest text left
    while start < len(lengths):
        end = min(len(lengths), start + max(1, min(8, 256 // lengths[start])))
        greedy.append((start, end))
        start = end
    assert cost(runs) < cost(greedy)
    assert encoder_runs([], max_rows=8) == []
    assert encoder_runs([500, 400], max_rows=8, max_tokens=256) == [(0, 1), (1, 2)]  # too long to share a run
