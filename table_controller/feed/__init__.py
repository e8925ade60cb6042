"""The MQTT interface: topics, payload models, the message factory, schemas and AsyncAPI.

``topics`` names every topic once; ``payloads`` gathers the models (by topic in
``status``, ``events``, ``records``, ``alerts``, ``delivery``) and parses any of
them; ``schema`` and ``asyncapi`` generate the shipped documents.

May import: ``table_controller.engine`` (its enums and records) and nothing that
opens a connection. Tables, pit displays and recorders all speak through these
models. Only ``envelope`` and ``messages``, which build the table's outbox
messages, import ``table_controller.service``; a reader of the feed needs neither.
"""
