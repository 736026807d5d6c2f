"""MACR over plain data: executable rules (rules.py), the Reasoner (reasoner.py), the Observer's
rule validation (observer.py), knowledge-assessment entropy (entropy.py) and the JSON Lines
contract of `manage.py suggest_resolutions` (sets.py). The LLM parts are not here."""
