"""Polarity, modality and channel of a claim: general English, no list of particular predicates.

A claim is negative when it denies ("cannot", "not allowed", "unable to", "no longer", "non-refundable");
"no charge", "no later than", "no more than" bound or price something and deny nothing. Channels say
where or how something is done (online, in the app, in person, by phone …).
"""
from __future__ import annotations

import re

# "not just" / "not only" adds ("in person, not just online"): it denies nothing.
DENYING_NOT = r"not\b(?!\s+(?:just|only)\b)"
NEGATION_RE = re.compile(
    r"\b(?:" + DENYING_NOT + r"|never|cannot|can't|won't|don't|doesn't|didn't|isn't|aren't|wasn't|weren't|shouldn't|mustn't|"
    r"couldn't|unable|no longer|nor|neither|prohibited|forbidden|banned|refuse[sd]?|decline[sd]?|"
    r"unavailable|ineligible|impossible|excluded|disallowed|without)\b|\bnon-[a-z]+|\bno\b(?!-)(?! (?:later|more|less|"
    r"sooner|fewer|extra|additional|charge|cost|fee|need|problem|questions?|worries|matter)\b)", re.I)
NO_NEED_RE = re.compile(r"\b(?:no need|not (?:required|necessary|needed|mandatory|compulsory)|optional|"
                        r"don't (?:need|have) to|do not (?:need|have) to|needn't)\b", re.I)
MUST_RE = re.compile(r"\b(?:must|required|mandatory|compulsory|have to|has to|need to|needs to|obligatory)\b",
                     re.I)
# A claim that permits or offers something ("you can", "may", "are welcome to"): what a denial can contradict.
PERMISSION_RE = re.compile(r"\b(?:can|may|allowed|permitted|welcome|able to|accepts?|accepted|eligible)\b", re.I)
PLACE_NOUNS = r"(?:front |home )?(?:desk|counter|reception|branch|office|store|shop|club|clinic|box office|kiosk|library)(?:e?s)?"
CHANNELS = {
    "web": r"\bonline\b|\b(?:our|the) website\b|\bweb ?site\b|\bweb form\b|\bonline form\b|\bportal\b",
    "app": r"\b(?:mobile |our |the )?app\b|\bapplication on your phone\b",
    "in_person": r"\bin[- ]person\b|\bin[- ]store\b|\bin[- ]branch\b"
                 r"|\b(?:at|to|from|in) (?:the |our |any |your |a |an |(?:either|any|one|each) of (?:our|the) )?"
                 r"(?:(?-i:[A-Z])[\w'\-]* ){0,3}" + PLACE_NOUNS + r"\b"
                 r"|\bcome in\b|\bpop in\b|\bvisit (?:us|our|a|the|any)\b|\bwalk-?in\b",
    "phone": r"\bby (?:tele)?phone\b|\bover the phone\b|\b(?:call|ring|phone) (?:us|our|the|your)\b|\bhotline\b"
             r"|\bgive (?:us|\w+ \w+) a (?:call|ring)\b|\bphone line\b"
             r"|\b(?:ringing|calling|phoning) (?:us|our|the|your|any|one)\b",
    "post": r"\bby (?:post|mail|letter)\b|\bin writing\b|\bpostal\b|\bposted\b|\bpost (?:it|them|\w+ documents|documents|papers)\b",
    "email": r"\bby e-?mail\b|\bemail us\b|\be-?mail (?:us|our)\b",
    "chat": r"\blive chat\b|\bchat\b|\bmessenger\b|\bwhatsapp\b",
    "video": r"\bvideo(?:[- ]call|[- ]chat)?\b|\bby video\b",
    "delivery": r"\bdeliver(?:ed|s)? (?:\w+ ){0,2}to your (?:door|home|address)\b|\bhome delivery\b|\bby courier\b",
}
CHANNEL_RES = {name: re.compile(pattern, re.I) for name, pattern in CHANNELS.items()}


ANSWER_PARTICLE_RE = re.compile(r"^\s*(?:yes|no|sorry)\s*[,.:;!\-\u2013\u2014]+\s*", re.I)


COORDINATION_RE = re.compile(r"[;,]|\b(?:and|but|or)\b", re.I)


def is_negative(text: str) -> bool:
    """Whether the claim denies what it states: a clause with an odd number of denials ("cannot travel
    without an adult" affirms; "not made up and not refunded" denies). A leading "No," answers a question
    and says nothing about the sentence after it."""
    return any(len(NEGATION_RE.findall(clause)) % 2 == 1 and not CONDITION_CLAUSE_RE.match(clause)
               for clause in COORDINATION_RE.split(ANSWER_PARTICLE_RE.sub("", text)))


# A clause that states a condition ("even if they don't receive benefits") denies nothing the claim states.
CONDITION_CLAUSE_RE = re.compile(r"\s*(?:even )?(?:if|unless|as long as|provided)\b", re.I)


CONDITION_OPENING_RE = re.compile(r"\b(?:who|whose|if|unless|whoever|anyone|those)\b", re.I)


def _denials(text: str) -> list[list[str]]:
    """Per denial, the words it applies to: the word after "non-", else up to three after each "not" /
    "cannot" within its clause, names left out (what is denied is an action or a quality, not a place)."""
    body = ANSWER_PARTICLE_RE.sub("", text)
    denials: list[list[str]] = []
    for match in NEGATION_RE.finditer(body):
        if match.group().lower().startswith("non-"):
            denials.append([match.group()[4:].lower()])
            continue
        if CONDITION_OPENING_RE.search(re.split(r"[,;:.()]", body[:match.start()])[-1]):
            continue  # "passengers who cannot show a ticket pay …": a condition, not what the claim denies
        clause = re.split(r"[,;:.()]|\s[-\u2013\u2014]\s", body[match.end():], maxsplit=1)[0]
        # Words that carry a denial on to what it denies use up none of its reach: "can't be used to come back".
        following = [w for w in re.findall(r"[A-Za-z][A-Za-z'\-]+", clause) if w.lower() not in DENIAL_CARRIERS][:3]
        denials.append([w.lower() for w in following if not w[0].isupper()])
    return denials


def denied_of(text: str) -> frozenset[str]:
    """What passive denials are said of: "outside food" in "outside food is not allowed", "regional postcodes"
    in "regional postcodes aren't covered"."""
    body = ANSWER_PARTICLE_RE.sub("", text)
    words: set[str] = set()
    for match in NEGATION_RE.finditer(body):
        clause = re.split(r"[,;:.()]|\s[-\u2013\u2014]\s", body[match.end():], maxsplit=1)[0]
        following = [w for w in re.findall(r"[A-Za-z][A-Za-z'\-]+", clause) if w.lower() not in DENIAL_CARRIERS]
        if following and PARTICIPLE_RE.fullmatch(following[0]):
            words.update(_passive_subject(body[:match.start()]))
    return frozenset(words)


# The verb chain between a denial and the verb it denies ("can't be used to", "not able to"), and articles.
DENIAL_CARRIERS = frozenset("""be been being is are was were to able need needs have has get ever yet always
longer the a an""".split())
PARTICIPLE_RE = re.compile(r"[a-z]+(?:ed|en|wn)|(?:allowed|permitted|accepted|covered|included|seen|paid|sent|done|"
                           r"kept|held|sold|given|taken|made|eligible|available|possible)", re.I)
PASSIVE_AUXILIARY_RE = re.compile(r"\b(?:is|are|was|were|be|been|can|cannot|may|will|must)\s*$", re.I)
LEADING_FUNCTION_WORDS = frozenset("we're sorry but and so please however the a an our your all any".split())


def _passive_subject(before: str) -> list[str]:
    """The words of the noun phrase a passive denial is said of: "regional postcodes" in "… regional
    postcodes aren't covered", "outside food" in "outside food is not allowed"."""
    clause = re.split(r"[,;:.()]|\s[-\u2013\u2014]\s|\bbut\b", before)[-1]
    clause = PASSIVE_AUXILIARY_RE.sub("", clause.strip())
    words = re.findall(r"[A-Za-z][A-Za-z'\-]+", clause)
    if not words or len(words) > 6 or any(w.lower() in ("if", "when", "who", "once", "unless") for w in words):
        return []
    return [w.lower() for w in words if w.lower() not in LEADING_FUNCTION_WORDS]


def denied_words(text: str) -> frozenset[str]:
    """The words the claim's denials apply to."""
    return frozenset(word for words in _denials(text) for word in words)


def denied_predicates(text: str, filler: frozenset[str]) -> frozenset[str]:
    """What each denial denies first, `filler` skipped: "rent" in "we don't rent kayaks at the lake"."""
    return frozenset(next((w for w in words if w not in filler), "") for words in _denials(text)) - {""}


def modality(text: str) -> str:
    """"required", "optional" or "" (neither said)."""
    if NO_NEED_RE.search(text):
        return "optional"
    if MUST_RE.search(text) and not is_negative(text):
        return "required"
    return ""


def channels(text: str) -> frozenset[str]:
    return frozenset(name for name, pattern in CHANNEL_RES.items() if pattern.search(text))


def strip_negation(text: str) -> str:
    """The claim with its denials removed: what it is about, whichever way it says it
    ("non-refundable" keeps "refundable")."""
    text = re.sub(r"\bnon-(?=[a-z])", "", text, flags=re.I)
    return re.sub(r"\s+", " ", NEGATION_RE.sub(" ", NO_NEED_RE.sub(" ", text))).strip()


# "…, not …" sets a contrast apart: "bring it to the desk, not the drop box" denies the drop box, not the desk ("…, not
# just online" adds to the clause before it and stays in it).
CLAUSE_RE = re.compile(r";|,\s*(?:but|while|whereas|and)\s|,\s*(?=" + DENYING_NOT + r")|\.\s|\bbut\b|\s[-\u2013\u2014]\s")


def channel_stances(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(channels affirmed, channels denied), clause by clause: "made online; staff cannot accept forms"."""
    affirmed, denied = set(), set()
    for clause in CLAUSE_RE.split(text):
        (denied if is_negative(clause) else affirmed).update(channels(clause))
    return frozenset(affirmed), frozenset(denied)
