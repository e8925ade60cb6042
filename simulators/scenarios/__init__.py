"""Scenario files shipped for test rigs (``table-controller scenario run --shipped``)."""
