"""An HTTP client for the user's own OpenAI-compatible chat model, which extracts facts from chat
turns and reviews dream plans.

May import: the core and httpx; nothing else of this package (the store receives it as a
strategy).
"""
