"""The conflicts shown on the articles app's pages, as panels (kbreview.panels) that conflicts/apps.py registers:
on the article page, the conflicts the article is part of and the model's disagreements with it; before a restore,
the reviewed conflicts it would bring back to Open."""
from __future__ import annotations

from django.template.loader import render_to_string

from conflicts import selectors
from conflicts.services.restores import conflicts_brought_back
from conflicts.views.display import with_explanations


def article_conflicts_panel(request, *, article) -> str:
    context = {
        "article": article,
        "conflicts": selectors.conflicts_for_article(knowledge_base=request.kb, article_id=article.pk),
        "model_disagreements": with_explanations(
            selectors.model_disagreements_for_article(knowledge_base=request.kb, article_id=article.pk)
        ),
    }
    return render_to_string("conflicts/_article_conflicts.html", context, request=request)


def restore_coming_back_panel(request, *, article, version) -> str:
    """The reviewed conflicts a restore of `version` (None: undeleting the article) would bring back; "" for none."""
    coming_back = conflicts_brought_back(knowledge_base=request.kb, article=article, version=version)
    if not coming_back:
        return ""
    context = {"article": article, "version": version, "coming_back": coming_back}
    return render_to_string("conflicts/_restore_coming_back.html", context, request=request)
