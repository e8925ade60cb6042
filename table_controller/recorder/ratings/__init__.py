"""Ratings, pace, hold and the records' hash chain (``docs/recorder.md``, "Ratings, pace and hold").

Everything here is computed from what the recorder stored: the ``war-round/1``
records, the ``dealer_changed`` events and each table's latest ``status``.
The house edges and variances are the odds tool's exact fractions
(:mod:`table_controller.tools.odds`, which imports only the engine's profiles),
for each round's own rules, overrides and the table's decks.
"""
