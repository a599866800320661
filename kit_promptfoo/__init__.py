"""Promptfoo glue: the offline launcher, the agent provider and the oracle assertion.

Nothing here is imported by `kit`; these modules import `kit`, never the other way round.
"""
