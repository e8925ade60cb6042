"""The web pit display: floor, table, alerts and report pages for supervisors (read only).

Served by the recorder process beside its JSON API, from the same store
(:class:`~table_controller.recorder.web.data.PitData`), behind read-only
logins (:mod:`.users`, :mod:`.auth`). Pages are rendered on the server
(Jinja2), charts are SVG drawn on the server, and one small script applies
``/api/live`` changes: nothing is fetched from the internet at run time.

May import: ``table_controller.recorder`` (its store and config), ``feed`` and
``engine``; never ``service``, ``rigs`` or ``simulators``.
"""
