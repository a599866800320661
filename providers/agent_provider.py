"""Promptfoo's provider for this repository's agent: the kit's (kit_promptfoo.agent_provider). Written by
`kit init`; the agent is the `agent:` of the provider's config in promptfooconfig.yaml."""

from kit_promptfoo.agent_provider import call_api

__all__ = ["call_api"]
