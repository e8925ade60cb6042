"""Tools for people who check the game: the odds tool and hand history from a journal.

May import: ``table_controller.engine``, ``table_controller.feed`` and
``table_controller.service`` (to read a table's journal).
"""
