"""Test helpers shared across apps (the scripted LLM server, ...)."""
