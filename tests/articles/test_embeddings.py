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
