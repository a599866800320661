"""Test doubles of the model: local stand-ins reached through the same HTTP path a real model is."""
