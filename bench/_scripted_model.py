"""The scripted model of bench/reply_overhead.py, served from a process of its own.

Prints its base URL, serves until stdin closes. A request with model "control" sets the phase or the
detection delay (JSON in the user message) and answers with the request counts so far.
"""
from __future__ import annotations

import json
import re
import sys
import threading
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ANSWER_DELAY_S = 0.8
DETECTION_DELAY_S = 1.5


class Script:
    """The scripted model: answers cite the first passage; detection flags the first pair."""

    _PASSAGE = re.compile(r'<passage tag="\[\[([^\]]+)\]\]"')
    _ARTICLE = re.compile(r'<article ref="([^"]+)"[^>]*>\n(.*?)\n</article>', re.DOTALL)

    def __init__(self) -> None:
        self.detection_delay_s = DETECTION_DELAY_S
        self.counts: Counter = Counter()
        self.lock = threading.Lock()
        self.phase = "setup"

    def __call__(self, request: dict):
        from tests.support.scripted_llm import answer, message_text

        if request.get("model") == "control":
            changes = json.loads(message_text(request, "user") or "{}")
            with self.lock:
                self.phase = changes.get("phase", self.phase)
                self.detection_delay_s = changes.get("detection_delay_s", self.detection_delay_s)
                counts = {f"{phase}/{kind}": n for (phase, kind), n in self.counts.items()}
            return answer(counts)

        fmt = request.get("response_format") or {}
        name = (fmt.get("json_schema") or {}).get("name", "")
        user = message_text(request, "user")
        with self.lock:
            self.counts[(self.phase, name or "other")] += 1
        if name == "answer":
            refs = self._PASSAGE.findall(user)
            cite = f" [[{refs[0]}]]" if refs else ""
            return answer({"reply": f"Here is what our help centre says.{cite}"}, delay_s=ANSWER_DELAY_S)
        articles = self._ARTICLE.findall(user)
        pairs = []
        if len(articles) >= 2:
            (ref_a, text_a), (ref_b, text_b) = articles[0], articles[1]
            quote = lambda text: text.split("\n\n", 1)[-1].strip().split("\n")[0][:60]  # noqa: E731
            pairs.append({
                "refs": [ref_a, ref_b], "explanation": "The two articles state different terms for the same thing.",
                "conflict": True, "type": "policy",
                "snippets": [{"ref": ref_a, "quote": quote(text_a)}, {"ref": ref_b, "quote": quote(text_b)}],
            })
        pairs.append({"refs": ["kb-not-given-1", "kb-not-given-2"], "explanation": "invented", "conflict": False,
                      "type": "none", "snippets": []})
        return answer({"pairs": pairs}, delay_s=self.detection_delay_s)




def main() -> None:
    from tests.support.scripted_llm import ScriptedLLM

    server = ScriptedLLM(respond=Script())
    # A client that gave up on a hung call resets its connection; expected here, not worth a traceback.
    server._server.handle_error = lambda request, client_address: None
    server.start()
    print(server.base_url, flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
    server.stop()


if __name__ == "__main__":
    main()
