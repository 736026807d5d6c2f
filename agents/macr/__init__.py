"""MACR over plain data.

Without an LLM: executable rules (rules.py), the Reasoner's rule ordering (reasoner.py), the Observer's
rule validation (observer.py), knowledge-assessment entropy (entropy.py) and the JSON Lines contract of
`manage.py suggest_resolutions` (sets.py).

With an LLM (calls.py counts them): knowledge assessment (assessment.py), knowledge retrieval
(retrieval.py), the Analyzer (analyzer.py), textual rules / provisional judgment / synthesis
(reasoning.py), candidate-rule generation for the Observer (induction.py), the whole chain
(pipeline.py: run_macr, suggest_for_conflict), prompts and schemas (prompts.py), and the paper's
evaluation (evaluation.py, `manage.py macr_eval`, `manage.py calibrate_entropy`)."""
