"""Generated data for bench/detection_cost.py: a support KB with planted conflicts, questions, a replay and
its arrival times, and the oracle the scripted LLM answers with. Plain Python, no Django.

The KB is a telecom-style help centre: PRODUCTS x ASPECTS topics, a few articles per topic (FAQ, guide,
policy page, ...). Each article states its topic's fact (price, notice period, support hours, phone,
activation procedure, ...) in one of several equivalent formats, sometimes a second fact about the same
product, and neutral filler. Planting changes the fact's value in one article of a topic; every pair of
articles that state that fact with different values is then a planted conflicting pair (the ground truth
is computed from the facts, so the oracle and the recall denominator can never disagree).
"""
from __future__ import annotations

import datetime as dt
import itertools
import random
import re
import threading
from dataclasses import dataclass, field

PRODUCTS = [
    "Starter Broadband", "Family Broadband", "Pro Broadband", "Business Fibre", "Rural Wireless",
    "Basic Mobile", "Unlimited Mobile", "Travel SIM", "Kids Mobile", "Tablet Data",
    "Smart TV Box", "Sports Pack", "Movies Pack", "Home Phone", "Mesh Wi-Fi Kit",
    "Home Security", "Cloud Backup", "Device Insurance", "Smart Watch Plan", "Gaming Boost",
    "Student Bundle", "Senior Plan", "Small Office Bundle", "Prepaid Mobile", "Landline Saver",
]


@dataclass(frozen=True)
class Aspect:
    key: str
    title: str
    conflict_type: str  # agents.llm_detector.CONFLICT_TYPES
    values: tuple  # canonical values a topic can have
    formats: tuple  # templates for the value text, {v} = value; None entries skipped when not applicable
    sentences: tuple  # templates with {P} (product) and {val} (formatted value)


def _money(v: int) -> tuple[str, ...]:
    return (f"€{v}", f"{v}.00 EUR", f"{v} euros")


def _days(v: int) -> tuple[str, ...]:
    forms = [f"{v} days"]
    if v % 7 == 0:
        forms.append(f"{v // 7} weeks")
    return tuple(forms)


def _months(v: int) -> tuple[str, ...]:
    forms = [f"{v} months"]
    if v % 12 == 0:
        forms.append(f"{v // 12} year" if v == 12 else f"{v // 12} years")
    return tuple(forms)


def _hours(v: tuple[int, int]) -> tuple[str, ...]:
    open_h, close_h = v
    return (f"{open_h:02d}:00 to {close_h:02d}:00", f"{open_h} am to {close_h - 12} pm")


def _phone(v: int) -> tuple[str, ...]:
    return (f"01 555 {v:04d}", f"01-555-{v:04d}")


ASPECTS: tuple[Aspect, ...] = (
    Aspect("price", "monthly price", "price", tuple(range(15, 90, 3)), (), (
        "The {P} plan costs {val} per month.",
        "You pay {val} per month for {P}.",
        "{P} is billed at {val} per month, VAT included.",
    )),
    Aspect("setup", "setup fee", "price", tuple(range(20, 100, 5)), (), (
        "A one-off setup fee of {val} applies to every new {P} order.",
        "New {P} orders carry a one-off setup fee of {val}.",
    )),
    Aspect("term", "minimum term", "policy", (12, 18, 24), (), (
        "{P} has a minimum term of {val}.",
        "The minimum term for {P} is {val}.",
    )),
    Aspect("notice", "cancellation notice", "policy", (14, 30, 60), (), (
        "To cancel {P}, give us {val} notice.",
        "Cancelling {P} needs a notice period of {val}.",
    )),
    Aspect("returns", "returns window", "policy", (14, 21, 28), (), (
        "You can return {P} equipment within {val} of delivery for a full refund.",
        "The returns window for {P} equipment is {val} from delivery.",
    )),
    Aspect("install", "installation time", "quantity", (3, 5, 10, 15), (), (
        "Installation of {P} takes {val} from the order date.",
        "An engineer completes the {P} installation within {val} of your order.",
    )),
    Aspect("hours", "support hours", "hours", ((8, 20), (9, 17), (8, 18), (9, 21)), (), (
        "The {P} support line is open Monday to Friday, {val}.",
        "{P} support: Monday to Friday, {val}.",
    )),
    Aspect("phone", "support phone", "contact", tuple(range(1000, 9999, 137)), (), (
        "Call the {P} support line on {val}.",
        "For {P} questions, the support line is {val}.",
    )),
    Aspect("activation", "activation", "procedure", ("app", "engineer"), (), (
        "{val}",
    )),
    Aspect("eligibility", "who can order", "eligibility", ("everyone", "new"), (), (
        "{val}",
    )),
)
ASPECT_BY_KEY = {aspect.key: aspect for aspect in ASPECTS}

_TEXT_VALUES = {
    ("activation", "app"): (
        "You activate {P} yourself in the app, under Services and then Activate.",
        "{P} is activated from the app: open Services, pick {P} and press Activate.",
    ),
    ("activation", "engineer"): (
        "An engineer activates {P} during a home visit booked after your order.",
        "{P} is switched on by one of our engineers at your address, never from the app.",
    ),
    ("eligibility", "everyone"): (
        "{P} is open to new and existing customers alike.",
        "Both new and existing customers can order {P}.",
    ),
    ("eligibility", "new"): (
        "{P} is available to new customers only.",
        "Only customers joining us for the first time can order {P}.",
    ),
}


def format_value(aspect_key: str, value, rng: random.Random) -> str:
    forms = {
        "price": _money, "setup": _money, "term": _months, "notice": _days, "returns": _days,
        "install": lambda v: (f"{v} working days",), "hours": _hours, "phone": _phone,
    }[aspect_key](value)
    return rng.choice(forms)


def fact_sentence(aspect: Aspect, product: str, value, rng: random.Random) -> str:
    if (aspect.key, value) in _TEXT_VALUES:
        return rng.choice(_TEXT_VALUES[(aspect.key, value)]).format(P=product)
    return rng.choice(aspect.sentences).format(P=product, val=format_value(aspect.key, value, rng))


KINDS = (
    ("FAQ", "faq"), ("Help guide", "web"), ("Policy", "pdf"), ("Product page", "web"),
    ("Terms summary", "pdf"), ("Troubleshooting", "manual"), ("News", "web"), ("Brochure", "pdf"),
)

FILLERS = (
    "This page explains what {P} customers most often ask us about.",
    "You will find your {P} bills and documents in My Account.",
    "Keep your account reference to hand when you contact us about {P}.",
    "Our {P} team reads every message sent through the chat in the app.",
    "Most questions about {P} are answered in the help centre.",
    "If something on this page is unclear, ask us in the chat.",
    "We send a confirmation e-mail once your {P} order is placed.",
    "Existing equipment stays yours to use while the order is processed.",
    "The help centre search finds every article that mentions {P}.",
    "Changes to your {P} order show up in My Account the next morning.",
    "Accessibility support is available for every {P} customer who needs it.",
    "You can update your contact details for {P} in My Account.",
    "Our engineers carry identification, so always ask to see it.",
    "Paper bills are still available on request for {P}.",
    "We explain any change to {P} in writing before it takes effect.",
    "Customers often combine {P} with another product from our range.",
    "The {P} welcome pack lists the equipment in the box.",
    "Feedback about {P} helps us improve this help centre.",
    "Router lights and what they mean are described in the equipment guide.",
    "Orders placed at the weekend are processed on the next working day.",
)


@dataclass
class Article:
    ref: str
    product: str
    aspect: str
    title: str
    source: str
    updated_at: dt.date
    sentences: list[str]
    facts: dict[tuple[str, str], tuple[object, str]]  # (product, aspect) -> (value, sentence stating it)
    edits: int = 0

    @property
    def body(self) -> str:
        # Two paragraphs, as FAQ answers and help pages usually have.
        cut = max(1, len(self.sentences) // 2)
        return " ".join(self.sentences[:cut]) + "\n\n" + " ".join(self.sentences[cut:])


@dataclass
class KB:
    articles: dict[str, Article]
    topics: dict[tuple[str, str], list[str]]  # (product, aspect) -> refs, best-known first
    canonical: dict[tuple[str, str], object]
    planted_articles: list[str]
    planted_pairs: set[tuple[str, str]] = field(default_factory=set)

    def conflict(self, a: str, b: str) -> tuple[str, str, str, str] | None:
        """Ground truth for a pair: (type, explanation, sentence in a, sentence in b), or None."""
        fa, fb = self.articles[a].facts, self.articles[b].facts
        for key in sorted(set(fa) & set(fb)):
            (va, sa), (vb, sb) = fa[key], fb[key]
            if va != vb:
                aspect = ASPECT_BY_KEY[key[1]]
                explanation = (f"{a} and {b} both state the {aspect.title} of {key[0]} as current, "
                               f"but give different values, so a customer cannot rely on both.")
                return aspect.conflict_type, explanation, sa, sb
        return None

    def related(self, a: str, b: str) -> bool:
        x, y = self.articles[a], self.articles[b]
        return x.product == y.product or x.aspect == y.aspect


def build_kb(*, n_articles: int, planted_share: float, seed: int) -> KB:
    rng = random.Random(seed)
    topics_all = [(p, a.key) for p in PRODUCTS for a in ASPECTS]
    per_topic = 8
    n_topics = min(len(topics_all), max(1, n_articles // per_topic))
    topic_keys = topics_all[:: max(1, len(topics_all) // n_topics)][:n_topics]
    canonical = {key: rng.choice(ASPECT_BY_KEY[key[1]].values) for key in topics_all}
    articles: dict[str, Article] = {}
    topics: dict[tuple[str, str], list[str]] = {}
    today = dt.date.today()
    for product, aspect_key in topic_keys:
        aspect = ASPECT_BY_KEY[aspect_key]
        slug = re.sub(r"[^a-z0-9]+", "-", product.lower()).strip("-")
        refs = []
        states = rng.sample(range(per_topic), k=max(2, round(per_topic * 0.6)))
        for index in range(per_topic):
            kind, source = KINDS[index % len(KINDS)]
            ref = f"{slug}-{aspect_key}-{index + 1}"
            facts: dict[tuple[str, str], tuple[object, str]] = {}
            sentences = [f.format(P=product) for f in rng.sample(FILLERS, k=rng.randint(4, 7))]
            if index in states:
                value = canonical[(product, aspect_key)]
                sentence = fact_sentence(aspect, product, value, rng)
                facts[(product, aspect_key)] = (value, sentence)
                sentences.insert(rng.randint(0, 2), sentence)
            if rng.random() < 0.35:
                other = rng.choice([a for a in ASPECTS if a.key != aspect_key])
                value = canonical[(product, other.key)]
                sentence = fact_sentence(other, product, value, rng)
                facts[(product, other.key)] = (value, sentence)
                sentences.insert(rng.randint(1, len(sentences)), sentence)
            articles[ref] = Article(
                ref=ref, product=product, aspect=aspect_key, title=f"{product}: {aspect.title} ({kind})",
                source=source, updated_at=today - dt.timedelta(days=rng.randint(30, 700)),
                sentences=sentences, facts=facts,
            )
            refs.append(ref)
        topics[(product, aspect_key)] = refs

    # Plant: in some topics, one article that states the topic's fact states a different value.
    candidates = [key for key, refs in topics.items()
                  if sum(1 for r in refs if key in articles[r].facts) >= 2]
    n_planted = min(len(candidates), round(n_articles * planted_share))
    planted_articles = []
    for key in rng.sample(candidates, k=n_planted):
        stating = [r for r in topics[key] if key in articles[r].facts]
        ref = rng.choice(stating)
        article = articles[ref]
        aspect = ASPECT_BY_KEY[key[1]]
        old_value, old_sentence = article.facts[key]
        new_value = rng.choice([v for v in aspect.values if v != old_value])
        new_sentence = fact_sentence(aspect, key[0], new_value, rng)
        article.sentences[article.sentences.index(old_sentence)] = new_sentence
        article.facts[key] = (new_value, new_sentence)
        planted_articles.append(ref)

    kb = KB(articles=articles, topics=topics, canonical=canonical, planted_articles=planted_articles)
    # Ground truth: every pair that states one fact with two values (cross-topic pairs included).
    by_fact: dict[tuple[str, str], list[str]] = {}
    for ref, article in articles.items():
        for key in article.facts:
            by_fact.setdefault(key, []).append(ref)
    for refs in by_fact.values():
        for a, b in itertools.combinations(sorted(refs), 2):
            if kb.conflict(a, b):
                kb.planted_pairs.add((a, b))
    return kb


def edit_article(article: Article, rng: random.Random) -> None:
    """A realistic small edit: one filler sentence reworded or replaced, the date bumped; facts untouched."""
    fact_sentences = {sentence for _, sentence in article.facts.values()}
    fillers = [i for i, s in enumerate(article.sentences) if s not in fact_sentences]
    unused = [f.format(P=article.product) for f in FILLERS if f.format(P=article.product) not in article.sentences]
    article.sentences[rng.choice(fillers)] = rng.choice(unused)
    article.edits += 1
    article.updated_at = article.updated_at + dt.timedelta(days=rng.randint(1, 20))


@dataclass(frozen=True)
class Question:
    text: str
    refs: tuple[str, ...]  # the fixed retrieval set, best-ranked first


def build_questions(*, kb: KB, n_questions: int, seed: int) -> list[Question]:
    """Each question is about one topic; retrieval returns 3-8 articles, mostly from that topic and 0-2 from
    related topics (same product or same aspect), preferring each topic's better-known articles."""
    rng = random.Random(seed)
    topic_keys = list(kb.topics)
    by_product: dict[str, list] = {}
    by_aspect: dict[str, list] = {}
    for key in topic_keys:
        by_product.setdefault(key[0], []).append(key)
        by_aspect.setdefault(key[1], []).append(key)

    def pick(refs: list[str], k: int, exclude: set[str]) -> list[str]:
        pool = [r for r in refs if r not in exclude]
        weights = [1.0 / (refs.index(r) + 1) ** 0.7 for r in pool]
        chosen: list[str] = []
        while pool and len(chosen) < k:
            i = rng.choices(range(len(pool)), weights=weights)[0]
            chosen.append(pool.pop(i))
            weights.pop(i)
        return chosen

    questions = []
    for q in range(n_questions):
        topic = rng.choice(topic_keys)
        size = rng.randint(3, 8)
        off_topic = min(rng.randint(0, 2), size - 2)
        refs = pick(kb.topics[topic], size - off_topic, set())
        for _ in range(off_topic):
            family = by_product[topic[0]] if rng.random() < 0.7 else by_aspect[topic[1]]
            neighbours = [key for key in family if key != topic] or [topic]
            refs += pick(kb.topics[rng.choice(neighbours)], 1, set(refs))
        # Retrieval ranks the on-topic articles first, with some noise.
        ranked = sorted(refs, key=lambda r: (kb.articles[r].aspect != topic[1]) + rng.random() * 1.2)
        aspect = ASPECT_BY_KEY[topic[1]]
        questions.append(Question(text=f"What is the {aspect.title} of {topic[0]}? (q{q})", refs=tuple(ranked)))
    return questions


@dataclass(frozen=True)
class Event:
    question: int
    edit_ref: str | None  # an article edited just before this turn


def build_replay(*, questions: list[Question], n_turns: int, zipf_s: float, edit_share: float, seed: int) -> list[Event]:
    """Turns drawn by Zipf popularity over the questions (popularity rank independent of topic)."""
    rng = random.Random(seed)
    order = list(range(len(questions)))
    rng.shuffle(order)
    weights = [1.0 / (rank + 1) ** zipf_s for rank in range(len(order))]
    draws = rng.choices(order, weights=weights, k=n_turns)
    events = []
    for q in draws:
        edit = rng.choice(questions[q].refs) if rng.random() < edit_share else None
        events.append(Event(question=q, edit_ref=edit))
    return events


# --- the oracle the scripted LLM answers with ----------------------------------------------------

_ARTICLE_REF = re.compile(r'<article ref="([^"]+)"')
_ARTICLE = re.compile(r"<article [^>]*>.*?</article>", re.S)


def arrivals(*, n: int, rate: float, seed: int) -> list[float]:
    """Arrival seconds of n turns, a Poisson process of `rate` turns per second."""
    rng = random.Random(seed)
    moments, second = [], 0.0
    for _ in range(n):
        second += rng.expovariate(rate)
        moments.append(second)
    return moments


def rough_tokens(text: str) -> int:
    return max(1, len(text) // 4)  # as tests/support/scripted_llm.py counts


class Oracle:
    """A respond callback for ScriptedLLM that answers agents.llm_detector's schema from the ground truth.

    Like a careful model following the prompt: lists every requested pair whose articles share a subject
    (same product or same aspect) with its verdict, leaves unrelated pairs out, and quotes for a conflict
    the exact sentence of each article. Counts calls and tokens as the server reports them.
    """

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.pairs_asked = 0
        # Where the prompt's characters go (system prompt, <article> elements, the rest of the user text) and
        # what the replies list: the breakdown detection_cost.py prints beside the totals.
        self.chars = {"system": 0, "articles": 0, "other": 0}
        self.items = self.conflict_items = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> dict:
        import json

        from agents.llm_detector import listed_pairs

        user = "\n".join(m.get("content") or "" for m in request["messages"] if m["role"] == "user")
        refs = _ARTICLE_REF.findall(user)
        if "Pairs to judge: every pair of the articles above." in user:
            pairs = list(itertools.combinations(refs, 2))
        else:
            pairs = listed_pairs(user)
        items = []
        for a, b in pairs:
            truth = self.kb.conflict(a, b)
            if truth is not None:
                conflict_type, explanation, quote_a, quote_b = truth
                assert quote_a in user and quote_b in user, "oracle quote missing from the prompt"
                items.append({"refs": [a, b], "explanation": explanation, "conflict": True, "type": conflict_type,
                              "snippets": [{"ref": a, "quote": quote_a}, {"ref": b, "quote": quote_b}]})
            elif self.kb.related(a, b):
                items.append({"refs": [a, b], "explanation": f"{a} and {b} cover related subjects and state no "
                              "different values for the same thing.", "conflict": False, "type": "none",
                              "snippets": []})
        content = {"pairs": items}
        prompt_chars = sum(len(m.get("content") or "") for m in request["messages"])
        with self._lock:
            self.calls += 1
            self.pairs_asked += len(pairs)
            self.prompt_tokens += rough_tokens("x" * prompt_chars)
            self.completion_tokens += rough_tokens(json.dumps(content))
            system = sum(len(m.get("content") or "") for m in request["messages"] if m["role"] != "user")
            shown = sum(len(element) for element in _ARTICLE.findall(user))
            self.chars["system"] += system
            self.chars["articles"] += shown
            self.chars["other"] += prompt_chars - system - shown
            self.items += len(items)
            self.conflict_items += sum(item["conflict"] for item in items)
        return content

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
