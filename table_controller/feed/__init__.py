"""The MQTT interface: payload models, the message factory, schemas and the AsyncAPI document.

May import: ``table_controller.engine`` (its enums and records) and nothing that opens a
connection. Tables, pit displays and recorders all speak through these models.
"""
