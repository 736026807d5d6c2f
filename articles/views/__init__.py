"""The articles app's screens: articles (list, search, detail, edit, restore) and sources (with drift review)."""
