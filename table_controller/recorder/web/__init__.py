"""The recorder's HTTP side: the JSON API now, server-rendered pit pages later.

``app.build_app`` assembles the routes: ``api.ROUTES`` under ``/api`` and the
OpenAPI document at ``/openapi.json``; a pages module adds its own routes
beside them, reading through the same ``queries``.
"""
