"""The running table: config, runner, journal and outbox, publisher, device wiring, sdnotify.

May import: ``table_controller.engine``, ``table_controller.feed`` and ``drivers``. It is the
only package that opens the journal or touches the MQTT client's internals (``publisher``).
Nothing here imports ``simulators``: whether a device is simulated is decided by its URL.
"""
