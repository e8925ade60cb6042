"""The terminal pit display: a read-only subscriber that shows every table of a site.

May import: ``table_controller.feed`` and ``table_controller.engine``; never
``table_controller.service`` (a pit machine runs no table).
"""
