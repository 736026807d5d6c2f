"""Function words: what says nothing about what a claim is about (shared by analysis and subjects)."""
from __future__ import annotations

STOPWORDS = frozenset("""a an the and or of to in on at by for from with within into is are be been was were it its
this that these those we our you your they their i my me us he she his her them as if so do does did have has had
will would can could may might must shall should any all some each every per than then there here what which
who when where why how not no yes also just only please through via""".split())
