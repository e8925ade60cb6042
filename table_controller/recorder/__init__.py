"""The pit's system of record: subscriber, database, JSON API (``docs/recorder.md``).

The recorder subscribes to every table of its sites (an MQTT 5 shared
subscription), stores each message once by its ``id``, tracks per table and
``epoch`` the highest contiguous ``feed_seq``, asks the tables to ``replay``
what is missing and ``ack``s only what is committed.

May import: ``table_controller.feed`` (payload models, broker settings) and
``table_controller.engine`` (the domain's enums). Never ``table_controller.service``,
``simulators`` or ``table_controller.rigs``: the recorder runs on a pit server, not a
table PC.
"""
