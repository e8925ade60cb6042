"""Simulated devices that speak the same bytes as the real ones.

Simulators import only ``drivers`` (to reuse the codecs). ``shoe``,
``console`` and ``board`` are the devices; ``serve`` serves a line device on
TCP, a pty or a serial port (``serve_on_port``, for rigs on real cables);
``cli``, ``commands``, ``sensors`` and ``stdin`` are ``table-controller sim``.
"""
