"""The recorder's HTTP side: the JSON API and the web pit display, both read only.

``app.build_app`` assembles the API: ``api.ENDPOINTS`` under ``/api`` and the
OpenAPI document at ``/openapi.json``. ``serve.web_app`` puts the pit pages
(floor, table, alerts, report: ``pages``) in front of it and the login gate
(``users``, ``auth``) in front of both; ``serve.serve_web`` runs it under
uvicorn, with TLS when configured. Pages are rendered on the server (Jinja2),
charts are SVG drawn on the server (``charts``), and one small script
(``static/live.js``) applies ``/api/live`` changes: nothing is fetched from the
internet at run time. The pages read through ``data.PitData``, which
``pitdata.StorePitData`` implements over the same ``queries`` as the API.

May import: ``table_controller.recorder`` (its store and queries), ``feed`` and
``engine``; never ``service``, ``rigs`` or ``simulators``.
"""
