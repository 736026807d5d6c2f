"""Intent-Guided Decoding (Jin, Yang, Chen, arXiv:2608.16515): answers that arbitrate between the retrieved context
and the model's own memory according to intent (STRICT / TRUTH).

arithmetic: the method's formulas over plain numbers; decoding: the algorithm over any Backend; local: exact,
full logits through transformers; openai_backend: approximate, over a server's top log-probabilities;
prompts: the branches' prompts and answer checks; pipeline: IGD on retrieved passages, with citations.
Submodules are imported where used: the local backend pulls in torch and transformers.
"""
