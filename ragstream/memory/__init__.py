"""Conversation memory per (user, project): the store it lives in and what of it goes into a prompt."""
