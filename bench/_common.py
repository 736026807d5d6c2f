"""Shared helpers for the benchmarks: Django on a database of their own, throwaway knowledge bases,
generated support articles and questions, percentiles and the closing `figure:` lines.

On the embedded default the benchmarks use their own database (`kbreview_bench_<script>` on the embedded
server), created and migrated on start and dropped at the end, so they never touch the user's data.
With DATABASE_URL set they work in knowledge bases with unique slugs and delete them at the end.
"""
from __future__ import annotations

import contextlib
import os
import random
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH_DATABASE = "kbreview_bench"  # + "_<script>": each benchmark has a database of its own

_own_database = False
_database_name = ""


def setup_django(*, database: str, fresh: bool = True) -> None:
    """django.setup() on database `kbreview_bench_<database>` (embedded default), fresh and migrated;
    the user's data stays untouched."""
    global _own_database, _database_name
    _database_name = f"{BENCH_DATABASE}_{database}"
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if not os.environ.get("DATABASE_URL"):
        os.environ["EMBEDDED_DATABASE_NAME"] = _database_name
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    db = settings.DATABASES["default"]
    _own_database = bool(db.get("EMBEDDED_PGDATA")) and db["NAME"] == _database_name
    if _own_database and fresh:
        _drop_bench_database()  # whatever an interrupted run left behind (e.g. a bloated HNSW index)
    call_command("migrate", verbosity=0, interactive=False)


def _drop_bench_database() -> None:
    from django.conf import settings
    from django.db import connections

    from kbreview.db.embedded import embedded_socket_dir

    connections.close_all()
    import psycopg
    from psycopg import sql

    db = settings.DATABASES["default"]
    socket_dir = embedded_socket_dir(Path(db["EMBEDDED_PGDATA"]))
    with psycopg.connect(host=socket_dir, user=db.get("USER") or "postgres", dbname="postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(_database_name)))
    db.pop("_database_ensured", None)  # the backend re-creates it on the next connection


def teardown(knowledge_bases: list) -> None:
    """Delete the benchmark's knowledge bases; on the bench database drop the whole database instead."""
    from django.db import connections

    if _own_database:
        _drop_bench_database()
        return
    for kb in knowledge_bases:
        kb.delete()
    connections.close_all()


def new_knowledge_base(prefix: str):
    from articles.models import KnowledgeBase

    slug = f"bench-{prefix}-{uuid.uuid4().hex[:8]}"
    return KnowledgeBase.objects.create(slug=slug, name=f"Benchmark {prefix} {slug[-8:]}")


# --- numbers ---------------------------------------------------------------------------------


def log(message: str) -> None:
    """Print at once: benchmarks run for minutes and their progress should show as it happens."""
    print(message, flush=True)


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100), like numpy's default."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    if not values:
        return "n=0"
    return (
        f"n={len(values)} p50={percentile(values, 50) * scale:.1f}{unit} p95={percentile(values, 95) * scale:.1f}{unit} "
        f"max={max(values) * scale:.1f}{unit} mean={sum(values) / len(values) * scale:.1f}{unit}"
    )


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    op: str
    target: float
    digits: int = 3

    def met(self) -> bool:
        return {"<": self.value < self.target, "<=": self.value <= self.target,
                ">": self.value > self.target, ">=": self.value >= self.target}[self.op]

    def line(self) -> str:
        return f"figure: {self.name} {self.value:.{self.digits}f} {self.unit} target {self.op} {self.target:g}"


def print_figures(figures: list[Figure]) -> None:
    """Side by side first (value, target, met?), then, last, the machine-readable lines."""
    print()
    print(f"{'figure':<28} {'value':>12} {'target':>12}  met")
    for f in figures:
        print(f"{f.name:<28} {f.value:>12.{f.digits}f} {f.op + ' ' + format(f.target, 'g'):>12}  {'yes' if f.met() else 'NO'}")
    for f in figures:
        print(f.line())


class Stopwatch:
    def __init__(self) -> None:
        self.started = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.started


# --- generated support articles ---------------------------------------------------------------
# A fictional retailer-and-service business (home electronics, subscriptions, repairs, stores).
# Templates are combined with varied products, plans, branches, prices, hours and policies, so
# articles read like a real help centre: similar shapes, different facts.

PRODUCTS = [
    "Aurora 5G router", "Pebble smart thermostat", "Cedar standing desk", "Lumen LED panel", "Harbor soundbar",
    "Tern e-bike", "Quill e-reader", "Atlas robot vacuum", "Nimbus air purifier", "Vela espresso machine",
    "Orbit smart speaker", "Fjord water filter", "Kestrel drone", "Maple baby monitor", "Summit hiking watch",
    "Drift noise-cancelling headphones", "Brio kids' tablet", "Cobalt gaming chair", "Juniper smart lock",
    "Sable 4K projector", "Wren video doorbell", "Ember space heater", "Mosaic photo printer", "Delta dashcam",
    "Lark fitness band", "Granite external SSD", "Iris security camera", "Oak mesh Wi-Fi kit", "Piper dishwasher",
    "Reef aquarium controller", "Saffron rice cooker", "Tundra chest freezer", "Umber electric kettle",
    "Vireo cordless drill", "Willow sewing machine", "Yarrow garden sensor", "Zephyr ceiling fan",
    "Basalt mini PC", "Coral smart plug", "Dune portable power station",
]
PLANS = ["Basic", "Plus", "Premium", "Family", "Business", "Student"]
BRANCHES = [
    "Leeds", "Bristol", "Glasgow", "Cardiff", "Belfast", "Norwich", "York", "Brighton", "Aberdeen", "Exeter",
    "Dundee", "Bath", "Oxford", "Cambridge", "Derby", "Swansea", "Inverness", "Plymouth", "Hull", "Lincoln",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
CARRIERS = ["Parcelway", "SwiftPost", "Northline Freight", "CityCourier"]
PAYMENT = ["Visa", "Mastercard", "American Express", "PayPal", "Apple Pay", "bank transfer", "gift card"]


def _money(rng: random.Random, low: int, high: int) -> str:
    return f"£{rng.randint(low, high)}.{rng.choice(['00', '49', '50', '95', '99'])}"


def _hour(rng: random.Random, low: int, high: int) -> str:
    h = rng.randint(low, high)
    return f"{h % 12 or 12}{':30' if rng.random() < 0.25 else ''} {'am' if h < 12 else 'pm'}"


def _phone(rng: random.Random) -> str:
    return f"0{rng.randint(300, 345)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}"


def _days(rng: random.Random) -> int:
    return rng.choice([7, 10, 14, 21, 28, 30, 45, 60, 90])


def _topic_price(rng, product, plan, branch):
    title = f"How much does the {product} cost?"
    paras = [
        f"The {product} costs {_money(rng, 29, 899)} including VAT when bought outright. "
        f"Members on the {plan} plan pay {_money(rng, 19, 799)}, and the price is the same online and in store.",
        f"You can spread the cost over {rng.choice([6, 12, 24, 36])} months at 0% APR with a deposit of "
        f"{_money(rng, 10, 99)}. Finance is subject to status and available to UK residents aged 18 or over.",
        f"Accessories are sold separately: a spare charger is {_money(rng, 9, 39)} and an extended "
        f"{rng.choice([2, 3, 5])}-year care pack is {_money(rng, 29, 149)}.",
        f"Prices shown on the website are updated every {rng.choice(['Monday', 'Thursday', 'morning', 'week'])}. "
        "If the price drops within 14 days of your purchase, contact us and we will refund the difference.",
    ]
    return title, paras


def _topic_hours(rng, product, plan, branch):
    weekday_open, weekday_close = _hour(rng, 7, 10), _hour(rng, 17, 21)
    title = f"Opening hours of our {branch} store"
    paras = [
        f"Our {branch} store is open Monday to Friday from {weekday_open} to {weekday_close}, "
        f"Saturday from {_hour(rng, 8, 10)} to {_hour(rng, 16, 18)}, and "
        f"{'closed on Sundays' if rng.random() < 0.4 else 'Sunday from ' + _hour(rng, 10, 11) + ' to ' + _hour(rng, 15, 17)}.",
        f"On bank holidays the {branch} store opens from {_hour(rng, 10, 11)} to {_hour(rng, 15, 16)}. "
        f"It is closed on Christmas Day, Boxing Day and New Year's Day.",
        f"The repair desk in {branch} closes {rng.choice([30, 45, 60])} minutes before the store. "
        f"Collections of repaired items such as the {product} are available until closing time.",
        f"Parking is free for the first {rng.choice([1, 2, 3])} hours at the retail park. "
        f"Call the store on {_phone(rng)} if you need step-free access or help carrying large items.",
    ]
    return title, paras


def _topic_returns(rng, product, plan, branch):
    window = _days(rng)
    title = f"Returning the {product}"
    paras = [
        f"You can return the {product} within {window} days of delivery for a full refund, as long as it is "
        f"in its original packaging with all accessories.",
        f"{'Opened items are refundable' if rng.random() < 0.5 else 'Opened items are non-refundable'} unless faulty. "
        f"A restocking fee of {rng.choice([0, 5, 10, 15])}% applies to opened items returned without a fault.",
        f"To start a return, sign in to your account, open the order and choose Return an item. Print the "
        f"{rng.choice(CARRIERS)} label and drop the parcel at any collection point, or bring it to a store.",
        f"Refunds go back to the original payment method within {rng.choice([3, 5, 7, 10])} working days of the "
        f"item reaching our warehouse. Gift card purchases are refunded as store credit.",
    ]
    return title, paras


def _topic_delivery(rng, product, plan, branch):
    title = f"Delivery options for the {product}"
    paras = [
        f"Standard delivery with {rng.choice(CARRIERS)} takes {rng.choice(['2-4', '3-5', '1-3'])} working days and costs "
        f"{_money(rng, 2, 9)}; it is free on orders over {_money(rng, 40, 100)}.",
        f"Next-day delivery is {_money(rng, 5, 15)} when you order before {_hour(rng, 13, 21)}, Monday to "
        f"{rng.choice(['Thursday', 'Friday', 'Saturday'])}. Orders placed later are dispatched the following working day.",
        f"Large items are delivered by a two-person team, who can take the packaging away for {_money(rng, 5, 20)}. "
        f"We deliver to mainland UK; the Highlands and islands take {rng.choice([1, 2, 3])} extra days.",
        f"You can collect from the {branch} store free of charge, usually within {rng.choice([1, 2, 4])} hours of "
        "ordering. Bring the order number and photo ID.",
    ]
    return title, paras


def _topic_warranty(rng, product, plan, branch):
    title = f"Warranty cover for the {product}"
    paras = [
        f"The {product} comes with a {rng.choice([1, 2, 3])}-year manufacturer's warranty covering faults in "
        "materials and workmanship. Accidental damage, liquid damage and wear are not covered.",
        f"{plan} members get an extra {rng.choice([6, 12, 24])} months of cover at no charge. "
        f"Register the product within {_days(rng)} days of purchase to activate the extension.",
        f"To claim, book a repair online or visit the {branch} repair desk with your proof of purchase. "
        f"Most repairs are completed within {rng.choice([5, 7, 10, 14])} working days.",
        "If we cannot repair the item, we replace it with the same or an equivalent model. "
        "Replacement items keep the remaining warranty of the original.",
    ]
    return title, paras


def _topic_subscription(rng, product, plan, branch):
    title = f"The {plan} membership plan"
    paras = [
        f"The {plan} plan costs {_money(rng, 3, 25)} a month or {_money(rng, 30, 240)} a year. "
        f"It includes free next-day delivery, {rng.choice([5, 10, 15])}% off repairs and priority support.",
        f"You can cancel at any time from your account page; {'no notice period applies' if rng.random() < 0.5 else f'a {rng.choice([14, 30])}-day notice period applies'}. "
        "Annual plans cancelled in the first 14 days are refunded in full.",
        f"The plan covers up to {rng.choice([2, 3, 4, 5, 6])} household members living at the same address. "
        f"Students can join the Student plan with a valid university e-mail address.",
        f"Members can book a free setup visit for products such as the {product} once a year.",
    ]
    return title, paras


def _topic_contact(rng, product, plan, branch):
    title = f"Contacting customer support about the {product}"
    paras = [
        f"Call our support line on {_phone(rng)}, open {rng.choice(['Monday to Friday', 'every day', 'Monday to Saturday'])} "
        f"from {_hour(rng, 8, 9)} to {_hour(rng, 18, 22)}. Calls cost the same as a local call.",
        f"You can e-mail help@{rng.choice(['brightmart', 'brightmart-support', 'help-brightmart'])}.co.uk; "
        f"we reply within {rng.choice([24, 48, 72])} hours. Live chat is available on the website during phone opening hours.",
        f"For urgent safety issues with the {product}, stop using it and call {_phone(rng)} at any time.",
        f"Written complaints go to Customer Relations, {rng.randint(1, 200)} {rng.choice(['Mill', 'Station', 'Harbour', 'Market'])} "
        f"Road, {branch} {rng.choice(['LS', 'BS', 'G', 'CF'])}{rng.randint(1, 20)} {rng.randint(1, 9)}{rng.choice('ABDEFGH')}{rng.choice('JLNPQRSTUWXYZ')}.",
    ]
    return title, paras


def _topic_troubleshoot(rng, product, plan, branch):
    title = f"The {product} will not turn on"
    paras = [
        f"First check the power: plug the {product} into a different socket and leave it charging for "
        f"{rng.choice([15, 20, 30, 60])} minutes. The status light should turn {rng.choice(['white', 'green', 'blue', 'amber'])}.",
        f"Hold the power button for {rng.choice([5, 10, 15, 20])} seconds to force a restart. If the light blinks "
        f"{rng.choice(['red', 'orange'])} {rng.choice([2, 3, 4])} times, the battery needs replacing.",
        f"A factory reset clears all settings: press the reset pin for {rng.choice([10, 15, 30])} seconds while the device is on. "
        "Back up your data first, because it cannot be recovered afterwards.",
        f"If none of this helps, book a repair at the {branch} store or request a free collection within the warranty period.",
    ]
    return title, paras


def _topic_payment(rng, product, plan, branch):
    accepted = rng.sample(PAYMENT, 4)
    title = "Payment methods we accept"
    paras = [
        f"We accept {', '.join(accepted[:-1])} and {accepted[-1]}. Cash is accepted in stores only, "
        f"up to {_money(rng, 200, 2000)} per transaction.",
        f"Your card is charged when the order is dispatched, not when it is placed. Pre-orders such as the "
        f"{product} are charged {rng.choice([1, 2, 3, 7])} days before release.",
        f"Gift cards are valid for {rng.choice([12, 24, 36])} months from the date of purchase and can be used online or in store.",
        f"Invoices for business customers on the {plan} plan are payable within {rng.choice([14, 30, 60])} days.",
    ]
    return title, paras


def _topic_tradein(rng, product, plan, branch):
    title = f"Trading in an old device for the {product}"
    paras = [
        f"Bring your old device to the {branch} store and get up to {_money(rng, 20, 400)} off the {product}. "
        f"Trade-in values are checked every {rng.choice(['week', 'fortnight', 'month'])}.",
        f"Devices must power on and have no cracked screen. We accept up to {rng.choice([1, 2, 3])} devices per purchase.",
        f"Remove your accounts and erase the device before trading it in; staff can help if you book a "
        f"{rng.choice([15, 20, 30])}-minute appointment.",
        "The trade-in credit is applied at the till and cannot be exchanged for cash.",
    ]
    return title, paras


TOPICS = [
    ("price", _topic_price), ("hours", _topic_hours), ("returns", _topic_returns), ("delivery", _topic_delivery),
    ("warranty", _topic_warranty), ("plan", _topic_subscription), ("contact", _topic_contact),
    ("fix", _topic_troubleshoot), ("payment", _topic_payment), ("tradein", _topic_tradein),
]

QUESTIONS = {
    "price": ["How much is the {product}?", "Can I pay for the {product} in monthly instalments?",
              "What does a {plan} member pay for the {product}?"],
    "hours": ["When is the {branch} store open on Saturday?", "Is the {branch} shop open on bank holidays?",
              "What time does the repair desk in {branch} close?"],
    "returns": ["Can I return an opened {product}?", "How long do I have to send back the {product}?",
                "How do I get a refund for the {product}?"],
    "delivery": ["How much is next day delivery for the {product}?", "Can I collect the {product} from {branch}?",
                 "Do you deliver the {product} to the Highlands?"],
    "warranty": ["Is accidental damage to my {product} covered?", "How long is the warranty on the {product}?",
                 "Does the {plan} plan extend the warranty?"],
    "plan": ["How much does the {plan} membership cost?", "Can I cancel my {plan} plan?",
             "How many people can share a {plan} plan?"],
    "contact": ["What is the phone number for {product} support?", "How do I e-mail customer service?",
                "Where do I send a written complaint?"],
    "fix": ["My {product} won't switch on, what should I do?", "How do I factory reset the {product}?",
            "The light on my {product} blinks red, is the battery dead?"],
    "payment": ["Do you take PayPal?", "When is my card charged for a pre-order?", "How long is a gift card valid?"],
    "tradein": ["How much can I get for trading in my old device?", "Can I trade in a phone with a cracked screen?",
                "Is trade-in credit paid in cash?"],
}


@dataclass
class GeneratedArticle:
    ref: str
    topic: str
    title: str
    paragraphs: list[str]
    source: str
    updated_at: object

    @property
    def body(self) -> str:
        return "\n\n".join(self.paragraphs)


def generate_articles(count: int, *, seed: int = 7, start: int = 0) -> list[GeneratedArticle]:
    """`count` support articles (≈ 600–1,300 characters, 4–6 paragraphs), deterministic for a seed."""
    import datetime as dt

    rng = random.Random(seed * 1_000_003 + start)
    articles = []
    for i in range(start, start + count):
        topic, make = TOPICS[i % len(TOPICS)]
        product, plan, branch = rng.choice(PRODUCTS), rng.choice(PLANS), rng.choice(BRANCHES)
        title, paras = make(rng, product, plan, branch)
        paras = paras[: rng.choice([3, 4, 4])]
        if rng.random() < 0.5:
            paras.append(
                f"This article applies to orders placed from {rng.choice(['1', '6', '15'])} "
                f"{rng.choice(['January', 'April', 'July', 'October'])} {rng.choice([2024, 2025])}. "
                f"Last reviewed by the {rng.choice(['support', 'store operations', 'policy', 'product'])} team."
            )
        if rng.random() < 0.35:
            paras.append(f"Related: {rng.choice(PRODUCTS)} setup guide, {plan} plan terms, {branch} store page.")
        articles.append(
            GeneratedArticle(
                ref=f"{topic}-{i:06d}",
                topic=topic,
                title=f"{title} ({branch})" if topic not in ("hours",) else title,
                paragraphs=paras,
                source=rng.choice(["faq", "faq", "web", "pdf"]),
                updated_at=dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 700)),
            )
        )
    return articles


def generate_questions(count: int, *, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        topic = rng.choice(list(QUESTIONS))
        out.append(rng.choice(QUESTIONS[topic]).format(
            product=rng.choice(PRODUCTS), plan=rng.choice(PLANS), branch=rng.choice(BRANCHES)))
    return out


def to_parsed(articles: list[GeneratedArticle]):
    from articles.ingest.common import ParsedArticle

    return [
        ParsedArticle(ref=a.ref, title=a.title, body=a.body, source=a.source, source_uri=f"bench://{a.ref}",
                      updated_at=a.updated_at, location=f"generated {a.ref}")
        for a in articles
    ]


@contextlib.contextmanager
def timed_calls(module, name: str, sink: list[float]):
    """Wrap `module.name` so each call's duration lands in `sink`; the real function still runs."""
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            sink.append(time.perf_counter() - started)

    setattr(module, name, wrapper)
    try:
        yield
    finally:
        setattr(module, name, original)
