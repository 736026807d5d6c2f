"""What a claim is about (its subject) versus who or what it is limited to (its scope).

Two claims only contradict when they share subject words that say *what* the value is (check-in, deposit,
warranty) and their scopes are compatible. Words that merely place a value in time or commerce (before,
departure, ticket, fare, booking) say nothing about which value it is, so they never count as evidence;
names (plans, routes, branches) and audiences (children, students, groups) are scope, compared separately.
"""
from __future__ import annotations

import re

from .text import content_tokens

# Words any support article uses around any value: never evidence that two values are the same attribute.
WEAK_WORDS = set(
    """before after until till prior ahead earlier later departure depart travel trip journey
    ticket fare card booking book order purchase account service off discount reduction percent
    each way per extra charge cost value valid schedul scheduled date time least most up within less
    made apply applies route sailing sail item items thing rest passenger person traveller customer""".split()
)
# Who a value is for: a price, limit or age for one audience says nothing about another one.
AUDIENCE_WORDS = set(
    """child children kid infant baby toddler adult student pupil senior pensioner youth teen teenager young
    member resident visitor guest holder group family employee teacher""".split()
)


def strong_topic(topic: frozenset, names: frozenset, *, keep_audience: bool = False) -> frozenset:
    """Subject words: the topic without weak words, audiences (unless they are the subject, as in "students
    are eligible") and the words of `names`."""
    name_words = {w for n in names for w in content_tokens(n, drop_generic=False)}
    return frozenset(t for t in topic if t not in WEAK_WORDS and t not in name_words
                     and (keep_audience or t not in AUDIENCE_WORDS))


def audience(topic: frozenset) -> frozenset:
    return frozenset(t for t in topic if t in AUDIENCE_WORDS)


def article_vocabulary(title: str, body: str) -> frozenset:
    """Every lowercased word of an article: a name the other article never mentions marks another scope."""
    return frozenset(w.lower() for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9'\-]*", title + " " + body))


def names_compatible(a: frozenset, b: frozenset, *, vocab_a: frozenset, vocab_b: frozenset) -> bool:
    """No name on one side that the other side's article never mentions, and no two different names.

    "Flex" vs no name is fine when the other article talks about Flex elsewhere (its section, its title);
    "Gold Plan" vs "Silver Plan", or a named card against an article that never mentions it, is not.
    """
    if (a - b) and (b - a):
        return False
    for names, vocab in ((a - b, vocab_b), (b - a, vocab_a)):
        for name in names:
            if not all(w in vocab for w in name.split()):
                return False
    return True


def audiences_compatible(a: frozenset, b: frozenset) -> bool:
    """Both sides name the same audience, or neither names any (a value for "groups" is not one for all)."""
    return a == b
