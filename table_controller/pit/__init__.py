"""The terminal pit display: a read-only subscriber that shows every table of a site.

May import: ``table_controller.feed`` and ``table_controller.engine``; never
``table_controller.service`` (a pit machine runs no table). One line of
``client`` still takes the broker URL, password and TLS helpers from
``service.publisher`` until they live in ``feed``.
"""
